package listeners

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// handler is the pgxlisten handler of one channel. It never returns an
// error: the listener logs problems itself, so that every error pgxlisten
// reports through LogError is about the connection.
type handler struct{ l *Listener }

// HandleNotification publishes the notification's event.
func (h handler) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	h.l.notify(n.Channel, n.Payload)
	return nil
}

// HandleBacklog runs after the channel's LISTEN on every (re)connect; it
// is the resync hook.
func (h handler) HandleBacklog(_ context.Context, _ string, conn *pgx.Conn) error {
	h.l.listening(conn)
	return nil
}

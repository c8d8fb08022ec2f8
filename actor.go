package chronos

import "context"

// actorKey carries who acts (an API key's name) through a context.
type actorKey struct{}

// SystemActor is the actor of changes no API key asked for.
const SystemActor = "system"

// WithActor returns ctx carrying who is acting, for the audit history:
// the API stores the name of the request's API key.
func WithActor(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, actorKey{}, name)
}

// ActorFrom returns who is acting in ctx, or SystemActor.
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return SystemActor
}

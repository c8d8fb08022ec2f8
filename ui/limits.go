package ui

import (
	"context"
	"fmt"

	"github.com/chronoshq/chronos"
)

// limitRow is a limit as the console shows it: its rate in words.
type limitRow struct {
	*chronos.Limit
	Rate string // "100 per 60 s", or "" without a rate
}

// limitRows are the overview's limits, in key order.
func limitRows(ls []*chronos.Limit) []limitRow {
	out := make([]limitRow, len(ls))
	for i, l := range ls {
		out[i] = limitRow{Limit: l, Rate: rateText(l)}
	}
	return out
}

func rateText(l *chronos.Limit) string {
	if l.Rate == nil {
		return ""
	}
	if l.Window() == 1 {
		return fmt.Sprintf("%d per second", *l.Rate)
	}
	return fmt.Sprintf("%d per %d s", *l.Rate, l.Window())
}

// limitOf puts the job's limit, with its state, in the job page's data
// (d["Limit"]); nothing when the job names none or the limit is gone.
func (c *Console) limitOf(ctx context.Context, j *chronos.Job, d map[string]any) error {
	if j.LimitKey == nil {
		return nil
	}
	l, err := c.db.Limit(ctx, *j.LimitKey)
	if chronos.ErrorCode(err) == chronos.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	d["Limit"] = limitRow{Limit: l, Rate: rateText(l)}
	return nil
}

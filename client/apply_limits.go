package client

import (
	"encoding/json"

	"github.com/chronoshq/chronos"
)

// limitKind: an item with "kind: Limit" is a limit (PUT
// /v1/limits/{key}): key, and max_concurrency and/or rate with
// per_seconds, the body's fields; checked as the server checks them (a
// rate without per_seconds is per second). See apply_objects.go for what
// apply does with it: limits are put before the jobs, whose limit_key
// must name a declared limit.
var limitKind = newKind(objectKind{kind: "Limit", noun: "limit", plural: "limits", name: "key",
	fields: []string{"max_concurrency", "rate", "per_seconds"}, values: true},
	checkLimit, (*Client).ListLimits, limitSettingsOf, (*Client).PutLimit, (*Client).DeleteLimit)

// checkLimit checks one limit of a manifest as PUT /v1/limits/{key}
// would (chronos.Limit.Validate).
func checkLimit(key string, raw json.RawMessage) (LimitSettings, map[string]string) {
	var s LimitSettings
	if bad := decodeFields(raw, &s, "key"); bad != nil {
		return s, bad
	}
	l := chronos.Limit{Key: key, MaxConcurrency: s.MaxConcurrency, Rate: s.Rate, PerSeconds: s.PerSeconds}
	if err := l.Validate(); err != nil {
		if e, ok := err.(*chronos.Error); ok && len(e.Fields) > 0 {
			return s, e.Fields
		}
		return s, map[string]string{"key": err.Error()}
	}
	s.PerSeconds = l.PerSeconds // the default, so that it compares with the server's
	return s, nil
}

// limitSettingsOf is a server's limit as the body that would set it.
func limitSettingsOf(l *chronos.Limit) (string, LimitSettings) {
	return l.Key, LimitSettings{MaxConcurrency: l.MaxConcurrency, Rate: l.Rate, PerSeconds: l.PerSeconds}
}

package http

import "github.com/chronoshq/chronos"

// The API keys, their roles and their parsing live in the root package
// (chronos.APIKey), shared with the console; these names keep the http
// package's API as it was.

// Role is what an API key may do.
type Role = chronos.Role

// Roles of API keys.
const (
	RoleRead  = chronos.RoleRead
	RoleWrite = chronos.RoleWrite
)

// APIKey is one configured key (see chronos.APIKey).
type APIKey = chronos.APIKey

// ParseAPIKey parses one API_KEYS entry (see chronos.ParseAPIKey).
func ParseAPIKey(entry string) (APIKey, error) { return chronos.ParseAPIKey(entry) }

// ParseAPIKeys parses every entry (see chronos.ParseAPIKeys).
func ParseAPIKeys(entries []string) ([]APIKey, error) { return chronos.ParseAPIKeys(entries) }

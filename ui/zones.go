package ui

import (
	_ "embed"
	"strings"
	"sync"
)

// zonesText lists the IANA time zones the form's picker offers (UTC, then
// the canonical zones of zone1970.tab). Any zone Go knows is accepted: the
// list only helps typing.
//
//go:embed zones.txt
var zonesText string

var zones = sync.OnceValue(func() []string { return strings.Fields(zonesText) })

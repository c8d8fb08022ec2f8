package sql_test

import (
	"errors"

	"github.com/chronoshq/chronos"
)

func asError(err error, target **chronos.Error) bool { return errors.As(err, target) }

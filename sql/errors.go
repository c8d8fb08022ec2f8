package sql

import (
	"errors"
	"fmt"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrLeaseLost is returned by a fenced write whose lease is gone: the run
// was reclaimed (or finished) and the write changed nothing.
var ErrLeaseLost = errors.New("lease lost")

// constraintFields names the API field behind each CHECK constraint, so a
// violation the validation missed still comes back as a 400 naming it.
var constraintFields = map[string]string{
	"jobs_name_check":                 "name",
	"jobs_schedule_check":             "cron_expr",
	"jobs_cron_expr_check":            "cron_expr",
	"jobs_timezone_check":             "timezone",
	"jobs_target_url_check":           "target_url",
	"jobs_method_check":               "method",
	"jobs_headers_check":              "headers",
	"jobs_timeout_seconds_check":      "timeout_seconds",
	"jobs_max_retries_check":          "max_retries",
	"jobs_backoff_check":              "backoff",
	"jobs_backoff_base_seconds_check": "backoff_base_seconds",
	"jobs_backoff_max_seconds_check":  "backoff_max_seconds",
	"jobs_overlap_check":              "overlap",
	"jobs_description_check":          "description",
	"jobs_labels_check":               "labels",
	"jobs_on_dead_url_check":          "on_dead_url",
	"jobs_secret_headers_check":       "secret_headers",
	"jobs_signing_secrets_check":      "signing_secrets",
	"job_runs_status_check":           "status",
	"job_runs_trigger_check":          "trigger",
}

// mapErr turns a database error into an application error where the
// client is to blame (EINVALID, ENOTFOUND, ECONFLICT), and otherwise wraps
// it with what was being done. what is e.g. "create job".
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return chronos.Errorf(chronos.ENOTFOUND, "%s: not found", what)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch pe.Code {
	case "23514": // check_violation
		field := constraintFields[pe.ConstraintName]
		if field == "" {
			field = pe.ConstraintName
		}
		if pe.ConstraintName == "jobs_schedule_check" {
			return chronos.InvalidFields(map[string]string{
				"cron_expr": "exactly one of cron_expr or run_at is required",
				"run_at":    "exactly one of cron_expr or run_at is required",
			})
		}
		return chronos.InvalidFields(map[string]string{field: "is out of range"})
	case "23502": // not_null_violation
		return chronos.InvalidFields(map[string]string{pe.ColumnName: "is required"})
	case "23503": // foreign_key_violation: the job (or run) is gone
		if pe.ConstraintName == "jobs_limit_key_fkey" { // or the job's limit is
			return chronos.InvalidFields(map[string]string{"limit_key": "names no limit: create it first (PUT /v1/limits/{key})"})
		}
		return chronos.Errorf(chronos.ENOTFOUND, "%s: not found", what)
	case "23505": // unique_violation
		if pe.ConstraintName == "jobs_name_key" {
			return &chronos.Error{Code: chronos.ECONFLICT, Message: what + ": a job with this name already exists",
				Fields: map[string]string{"name": "is taken by another job"}}
		}
		return chronos.Errorf(chronos.ECONFLICT, "%s: already exists", what)
	case "22P02", "22007", "22008", "22001", "22003", "22023", "22021", "22P05", "54000":
		// invalid text / datetime / too long / out of range / bad parameter /
		// bad encoding / untranslatable character / too large for an index.
		return chronos.Errorf(chronos.EINVALID, "%s: %s", what, pe.Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// lookupErr is the error of a read of one row: notFound when there is
// none, otherwise err mapped with what (mapErr).
func lookupErr(err error, notFound error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound
	}
	return mapErr(err, what)
}

// pgCode is the SQLSTATE of a Postgres error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Query logging: gorm statements routed to zerolog without their bound values.

package store

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/rs/zerolog"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"
)

// queryLogger routes gorm's logging to zerolog: failed statements at error
// (except "not found"; a unique violation, which the API answers with 409,
// at debug), slow ones at warn, the rest nowhere. Statements are logged
// with placeholders, never with their bound values: those are user data
// (a spec may hold secrets).
type queryLogger struct {
	log  zerolog.Logger
	slow time.Duration
}

func (l *queryLogger) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }
func (l *queryLogger) Info(context.Context, string, ...any)             {}
func (l *queryLogger) Warn(_ context.Context, msg string, args ...any) {
	l.log.Warn().Msgf(msg, args...)
}
func (l *queryLogger) Error(_ context.Context, msg string, args ...any) {
	l.log.Error().Msgf(msg, args...)
}

// ParamsFilter drops the bound values before gorm renders a statement for
// the log (gorm.ParamsFilter).
func (l *queryLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// gormPlaceholder is how gorm renders a PostgreSQL placeholder it has no
// value for ($1 becomes $1$).
var gormPlaceholder = regexp.MustCompile(`\$(\d+)\$`)

func (l *queryLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	statement := func() (string, int64) {
		sql, rows := fc()
		return gormPlaceholder.ReplaceAllString(sql, "$$$1"), rows
	}
	switch {
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, context.Canceled):
		sql, rows := statement()
		ev := l.log.Error()
		switch {
		case isUniqueViolation(err):
			ev = l.log.Debug()
		case Classify(err) != FaultNone:
			// The database is down or full: the API answers 503/507 and
			// logs the request; this line only adds the statement.
			ev = l.log.Warn()
		}
		ev.Err(err).Dur("elapsed", elapsed).Int64("rows", rows).Str("sql", sql).Msg("query failed")
	case l.slow > 0 && elapsed > l.slow:
		sql, rows := statement()
		l.log.Warn().Dur("elapsed", elapsed).Int64("rows", rows).Str("sql", sql).Msg("slow query")
	}
}

package sql

// RefreshQueueStatsSQLForTest lets the external tests EXPLAIN the query.
const RefreshQueueStatsSQLForTest = refreshQueueStatsSQL

-- queue_stats: one row, the leader's latest look at the run queue. The
-- leader rewrites it every few seconds (sql/queuestats.go); every instance
-- reads it when Prometheus scrapes /metrics, so the gauges are the same on
-- every instance and the counting is done once for the cluster, not once
-- per instance per scrape.
CREATE TABLE queue_stats (
    id                     boolean PRIMARY KEY DEFAULT true,
    pending                bigint NOT NULL,
    due                    bigint NOT NULL,
    leased                 bigint NOT NULL,
    running                bigint NOT NULL,
    oldest_due_at          timestamptz,
    computed_at            timestamptz NOT NULL,
    computed_by            text NOT NULL,

    CONSTRAINT queue_stats_one_row CHECK (id)
);

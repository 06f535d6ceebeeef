-- The latest snapshot of every conversation in a month of raw_logs, decided on narrow columns.
-- A conversation is re-logged each time it grows, and a vote re-logs both of its sides, so
-- one conv_id has several snapshots. Latest = greatest tstamp, then most messages, then the
-- event logged last (source_file, line_no), then side b over side a (then the later row,
-- which only decides between rows that share source_file and line_no: frames built by hand).
-- Output in conv_id order so reruns write identical files.
-- Input: a relation named sides, one row per logged conversation state (a non-null conv_id
-- of side a or b of a raw_logs row): conv_id, tstamp, n_messages (0 for null messages),
-- source_file, line_no, side (0 = a, 1 = b) and pick = 2 * (row position in raw_logs) + side.
-- The messages themselves stay out of the query (arena_assets/clean/snapshots.py gathers
-- the winners' by pick): sorting the nested payload was what cost here.
select conv_id, pick, cast(snapshots as integer) as snapshots, first_tstamp
from (
    select conv_id, pick,
           row_number() over (
               partition by conv_id
               order by tstamp desc, n_messages desc, source_file desc, line_no desc,
                        side desc, pick desc
           ) as snapshot_rank,
           count(*) over (partition by conv_id) as snapshots,
           min(tstamp) over (partition by conv_id) as first_tstamp
    from sides
)
where snapshot_rank = 1
order by conv_id

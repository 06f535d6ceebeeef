-- The latest snapshot of every conversation in a month of raw_logs.
-- A conversation is re-logged each time it grows, and a vote re-logs both of its sides, so
-- one conv_id has several snapshots. Latest = greatest tstamp, then most messages, then the
-- event logged last (source_file, line_no), then side b over side a. Output sorted by
-- conv_id so reruns write identical files.
-- Input: a relation named raw_logs (a view over the month's Parquet file, or a frame).
with sides as (
    select month, conv_id_a as conv_id, model_a as model, messages_a as messages,
           tstamp, user_hash, anony, source_file, line_no, 0 as side
    from raw_logs
    where conv_id_a is not null
    union all
    select month, conv_id_b, model_b, messages_b, tstamp, user_hash, anony, source_file,
           line_no, 1 as side
    from raw_logs
    where conv_id_b is not null
),
ranked as (
    select *,
           row_number() over (
               partition by conv_id
               order by tstamp desc, coalesce(len(messages), 0) desc,
                        source_file desc, line_no desc, side desc
           ) as snapshot_rank,
           count(*) over (partition by conv_id) as snapshots,
           min(tstamp) over (partition by conv_id) as first_tstamp
    from sides
)
select month, conv_id, model, tstamp, first_tstamp, user_hash, anony,
       cast(snapshots as integer) as snapshots, messages
from ranked
where snapshot_rank = 1
order by conv_id

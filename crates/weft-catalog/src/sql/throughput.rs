//! The throughput history: bytes moved to and from each peer zone, summed into buckets of
//! each level's step, and pruned to what each level keeps as it is written.

use super::rows::{get, parsed};
use super::{db, SqlCatalog};
use crate::{Throughput, ThroughputBucket, ThroughputLevel, ThroughputSample};
use async_trait::async_trait;
use weft_types::{Error, Millis, ZoneName};

#[async_trait]
impl Throughput for SqlCatalog {
    async fn add_throughput(
        &self,
        at: Millis,
        samples: &[ThroughputSample],
        levels: &[ThroughputLevel],
    ) -> Result<(), Error> {
        // Not audited: the zone's own measurement, not a change anyone made.
        let mut tx = self.begin_write().await?;
        for level in levels {
            let bucket = at - at.rem_euclid(level.step);
            for s in samples.iter().filter(|s| s.bytes > 0) {
                sqlx::query(
                    "INSERT INTO throughput (step, at, zone, direction, bytes) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (step, at, zone, direction) DO UPDATE SET bytes = throughput.bytes + excluded.bytes",
                )
                .bind(level.step)
                .bind(bucket)
                .bind(s.zone.as_str())
                .bind(s.direction.as_str())
                .bind(i64::try_from(s.bytes).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            }
            sqlx::query("DELETE FROM throughput WHERE step = $1 AND at < $2")
                .bind(level.step)
                .bind(bucket - level.keep)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }

    async fn throughput(&self, step: Millis, since: Millis) -> Result<Vec<ThroughputBucket>, Error> {
        sqlx::query(
            "SELECT at, zone, direction, bytes FROM throughput WHERE step = $1 AND at >= $2 \
             ORDER BY at, zone, direction",
        )
        .bind(step)
        .bind(since)
        .fetch_all(self.pool())
        .await
        .map_err(db)?
        .iter()
        .map(|r| {
            let zone: String = get(r, 1)?;
            Ok(ThroughputBucket {
                at: get(r, 0)?,
                zone: ZoneName::parse(&zone).map_err(|e| super::rows::corrupt("zone name", e.message))?,
                direction: parsed(r, 2, "direction")?,
                bytes: get::<i64>(r, 3)?.max(0) as u64,
            })
        })
        .collect()
    }
}

//! Managed transfers and their files.

use super::rows::{self, TRANSFER_COLS, TRANSFER_FILE_COLS, TRANSFER_FROM};
use super::{affected, audit, db, db_ctx, now_ms, placeholders, positional, rows_per_statement, SqlCatalog};
use crate::{
    Dialect, OidcClaims, PrincipalId, TransferCounts, TransferFile, TransferQuery, TransferRecord,
    TransferSpecJson, Transfers,
};
use async_trait::async_trait;
use sqlx::{Any, Transaction};
use std::collections::HashSet;
use weft_types::{
    Checksum, Error, FileState, LogicalPath, TransferId, TransferKind, TransferState, ZoneName,
};

#[async_trait]
impl Transfers for SqlCatalog {
    async fn create_transfer(
        &self,
        id: &TransferId,
        owner_id: PrincipalId,
        via_zone: Option<&ZoneName>,
        oidc: Option<&OidcClaims>,
        kind: TransferKind,
        spec: &TransferSpecJson,
    ) -> Result<TransferRecord, Error> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO transfers (id, owner_id, via_zone, oidc_groups, oidc_admin, kind, spec, state, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8)",
        )
        .bind(id.as_str())
        .bind(owner_id)
        .bind(via_zone.map(|z| z.as_str().to_owned()))
        .bind(oidc.map(rows::oidc_groups))
        .bind(oidc.is_some_and(|c| c.admin))
        .bind(kind.as_str())
        .bind(spec.as_str())
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(|e| db_ctx(e, format_args!("transfer {id}")))?;
        let (action, path, mut detail) = described(id, spec);
        if let Some(z) = via_zone {
            detail.push_str(&format!(" via zone {z}"));
        }
        audit::record(&mut tx, action, path.as_ref(), detail).await?;
        tx.commit().await.map_err(db)?;
        self.get_transfer(id)
            .await?
            .ok_or_else(|| Error::internal(format!("transfer {id} vanished after insert")))
    }

    async fn get_transfer(&self, id: &TransferId) -> Result<Option<TransferRecord>, Error> {
        sqlx::query(&format!(
            "SELECT {TRANSFER_COLS} FROM {TRANSFER_FROM} WHERE t.id = $1"
        ))
        .bind(id.as_str())
        .fetch_optional(self.pool())
        .await
        .map_err(db)?
        .as_ref()
        .map(rows::transfer)
        .transpose()
    }

    async fn list_transfers(
        &self,
        owner_id: Option<PrincipalId>,
        limit: u32,
    ) -> Result<Vec<TransferRecord>, Error> {
        let filter = if owner_id.is_some() {
            "WHERE t.owner_id = $2"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {TRANSFER_COLS} FROM {TRANSFER_FROM} {filter} ORDER BY t.created DESC, t.id LIMIT $1"
        );
        let mut q = sqlx::query(&sql).bind(i64::from(limit));
        if let Some(o) = owner_id {
            q = q.bind(o);
        }
        q.fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::transfer)
            .collect()
    }

    async fn transfer_page(&self, q: &TransferQuery) -> Result<Vec<TransferRecord>, Error> {
        // Conditions in the order their values are bound, each numbered as it is added.
        let mut conds: Vec<String> = Vec::new();
        let mut n = 0;
        let mut mark = || {
            n += 1;
            format!("${n}")
        };
        if q.owner_id.is_some() {
            conds.push(format!("t.owner_id = {}", mark()));
        }
        if q.state.is_some() {
            conds.push(format!("t.state = {}", mark()));
        }
        if q.kind.is_some() {
            conds.push(format!("t.kind = {}", mark()));
        }
        if q.created_since.is_some() {
            conds.push(format!("t.created >= {}", mark()));
        }
        if q.before.is_some() {
            let (c1, c2, i) = (mark(), mark(), mark());
            conds.push(format!("(t.created < {c1} OR (t.created = {c2} AND t.id < {i}))"));
        }
        let limit = mark();
        let filter = if conds.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conds.join(" AND "))
        };
        let sql = format!(
            "SELECT {TRANSFER_COLS} FROM {TRANSFER_FROM} {filter} ORDER BY t.created DESC, t.id DESC LIMIT {limit}"
        );
        let mut query = sqlx::query(&sql);
        if let Some(o) = q.owner_id {
            query = query.bind(o);
        }
        if let Some(s) = q.state {
            query = query.bind(s.as_str());
        }
        if let Some(k) = q.kind {
            query = query.bind(k.as_str());
        }
        if let Some(t) = q.created_since {
            query = query.bind(t);
        }
        if let Some((created, id)) = &q.before {
            query = query.bind(*created).bind(*created).bind(id.as_str().to_owned());
        }
        query
            .bind(i64::from(q.limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::transfer)
            .collect()
    }

    async fn transfers_in_state(&self, states: &[TransferState]) -> Result<Vec<TransferRecord>, Error> {
        let marks: Vec<String> = (1..=states.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT {TRANSFER_COLS} FROM {TRANSFER_FROM} WHERE t.state IN ({}) ORDER BY t.created, t.id",
            marks.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for s in states {
            q = q.bind(s.as_str());
        }
        q.fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::transfer)
            .collect()
    }

    async fn set_transfer_state(
        &self,
        id: &TransferId,
        state: TransferState,
        error: Option<&str>,
    ) -> Result<(), Error> {
        if state == TransferState::Cancelled {
            return cancel(self, id).await;
        }
        let now = now_ms();
        let stamps = match state {
            TransferState::Active => ", started = COALESCE(started, $4), finished = NULL",
            TransferState::Queued => ", finished = NULL",
            TransferState::Succeeded | TransferState::Failed | TransferState::Cancelled => ", finished = $4",
        };
        let done = sqlx::query(&format!(
            "UPDATE transfers SET state = $1, error = $2{stamps} WHERE id = $3"
        ))
        .bind(state.as_str())
        .bind(error)
        .bind(id.as_str())
        .bind(now)
        .execute(&mut *self.writer().await?)
        .await
        .map_err(|e| db_ctx(e, format_args!("transfer {id}")))?;
        if affected(done) == 0 {
            return Err(Error::not_found(format_args!("transfer {id}")));
        }
        Ok(())
    }

    async fn add_transfer_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error> {
        let mut tx = self.begin_write().await?;
        for chunk in files.chunks(rows_per_statement(11)) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| format!("({})", placeholders(1 + i * 11, 11)))
                .collect();
            let sql = format!(
                "INSERT INTO transfer_files (transfer_id, {TRANSFER_FILE_COLS}) VALUES {}",
                rows.join(", ")
            );
            let sql = positional(self.dialect, sql);
            let mut q = sqlx::query(&sql);
            for f in chunk {
                let what = q
                    .bind(id.as_str())
                    .bind(f.seq as i64)
                    .bind(f.source.to_string())
                    .bind(f.destination.to_string())
                    .bind(f.size as i64);
                q = bind_progress(what, f);
            }
            q.execute(&mut *tx).await.map_err(|e| {
                let (first, last) = (chunk[0].seq, chunk[chunk.len() - 1].seq);
                db_ctx(e, format_args!("files {first}-{last} of transfer {id}"))
            })?;
            count_states(&mut tx, self.dialect, id, chunk.iter().map(|f| f.seq), Count::In).await?;
        }
        let bytes: i64 = files.iter().map(|f| f.size as i64).sum();
        let done = sqlx::query(
            "UPDATE transfers SET files_total = files_total + $1, bytes_total = bytes_total + $2 WHERE id = $3",
        )
        .bind(files.len() as i64)
        .bind(bytes)
        .bind(id.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if affected(done) == 0 {
            return Err(Error::not_found(format_args!("transfer {id}")));
        }
        tx.commit().await.map_err(db)
    }

    /// Files that are not (or no longer) in the transfer are left alone. Both databases name the
    /// columns of a bare `VALUES` list `column1`, `column2`, ...
    async fn update_transfer_files(&self, id: &TransferId, files: &[TransferFile]) -> Result<(), Error> {
        // A file named twice takes its last state: one row each keeps the counts exact.
        let mut seen = HashSet::new();
        let mut files: Vec<&TransferFile> = files.iter().rev().filter(|f| seen.insert(f.seq)).collect();
        files.reverse();
        let mut tx = self.begin_write().await?;
        for chunk in files.chunks(rows_per_statement(7)) {
            // The counts move from the files' old states to their new ones inside the database:
            // reading each file's old state out instead cost a row through sqlx per file.
            count_states(&mut tx, self.dialect, id, chunk.iter().map(|f| f.seq), Count::Out).await?;
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| format!("({})", placeholders(1 + i * 7, 7)))
                .collect();
            // The transfer's id last, so that the parameters are numbered in order.
            let sql = format!(
                "UPDATE transfer_files SET state = v.column2, bytes_done = v.column3, attempts = v.column4, \
                 error = v.column5, checksum = v.column6, resume = v.column7 \
                 FROM (VALUES {}) AS v WHERE transfer_files.transfer_id = ${} AND transfer_files.seq = v.column1",
                rows.join(", "),
                1 + chunk.len() * 7
            );
            let sql = positional(self.dialect, sql);
            let mut q = sqlx::query(&sql);
            for f in chunk {
                q = bind_progress(q.bind(f.seq as i64), f);
            }
            q.bind(id.as_str()).execute(&mut *tx).await.map_err(db)?;
            count_states(&mut tx, self.dialect, id, chunk.iter().map(|f| f.seq), Count::In).await?;
        }
        tx.commit().await.map_err(db)
    }

    async fn transfer_files(
        &self,
        id: &TransferId,
        state: Option<FileState>,
        after_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<TransferFile>, Error> {
        let state_filter = if state.is_some() { " AND state = $4" } else { "" };
        let sql = format!(
            "SELECT {TRANSFER_FILE_COLS} FROM transfer_files WHERE transfer_id = $1 AND seq > $2{state_filter} \
             ORDER BY seq LIMIT $3"
        );
        let mut q = sqlx::query(&sql)
            .bind(id.as_str())
            .bind(after_seq.map_or(-1, |s| s as i64))
            .bind(i64::from(limit));
        if let Some(s) = state {
            q = q.bind(s.as_str());
        }
        q.fetch_all(self.pool())
            .await
            .map_err(db)?
            .iter()
            .map(rows::transfer_file)
            .collect()
    }

    async fn transfer_counts(&self, id: &TransferId) -> Result<TransferCounts, Error> {
        let rows = sqlx::query(
            "SELECT state, files, bytes_done, attempts FROM transfer_states \
             WHERE transfer_id = $1 AND files > 0 ORDER BY state",
        )
        .bind(id.as_str())
        .fetch_all(self.pool())
        .await
        .map_err(db)?;
        let mut counts = TransferCounts::default();
        for r in &rows {
            let state = rows::parsed(r, 0, "transfer file state")?;
            let n: i64 = rows::get(r, 1)?;
            let bytes: i64 = rows::get(r, 2)?;
            let attempts: i64 = rows::get(r, 3)?;
            counts.files_by_state.push((state, n as u64));
            counts.bytes_done += bytes as u64;
            counts.attempts += attempts as u64;
        }
        counts.files_by_state.sort();
        Ok(counts)
    }
}

/// How the audit log shows a new transfer: its action (`replicate` for a copy to
/// `replica://`, whose one source is the object or collection it copies), the path it is
/// about (its one source, if that is a path of the catalog) and the detail.
fn described(id: &TransferId, spec: &TransferSpecJson) -> (&'static str, Option<LogicalPath>, String) {
    // The spec is the transfer crate's; only these two fields are read, and a spec without
    // them (tests store `{}`) is shown by its id alone.
    let spec: serde_json::Value = spec.decode().unwrap_or_default();
    let sources: Vec<&str> = spec["sources"]
        .as_array()
        .map(|s| s.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let path = match sources[..] {
        [one] => LogicalPath::parse(one).ok(),
        _ => None,
    };
    match spec["destination"].as_str() {
        Some(to) if to.starts_with("replica://") && path.is_some() => {
            let place = to.trim_start_matches("replica://");
            ("replicate", path, format!("{id} to {place}"))
        }
        Some(to) => ("transfer", path, format!("{id} to {to}")),
        None => ("transfer", path, id.to_string()),
    }
}

/// Marks the open transfer `id` cancelled, recording who did; one already ended (or
/// cancelled through another server of the zone, whose run ends here now) keeps its state
/// and is not recorded again.
async fn cancel(c: &SqlCatalog, id: &TransferId) -> Result<(), Error> {
    let mut tx = c.begin_write().await?;
    let done = sqlx::query(
        "UPDATE transfers SET state = 'cancelled', error = NULL, finished = $1 \
         WHERE id = $2 AND state IN ('queued', 'active')",
    )
    .bind(now_ms())
    .bind(id.as_str())
    .execute(&mut *tx)
    .await
    .map_err(|e| db_ctx(e, format_args!("transfer {id}")))?;
    if affected(done) == 0 {
        let found: Option<String> = sqlx::query_scalar("SELECT state FROM transfers WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        if found.is_none() {
            return Err(Error::not_found(format_args!("transfer {id}")));
        }
        return tx.commit().await.map_err(db);
    }
    audit::record(&mut tx, "transfer", None, format!("cancel {id}")).await?;
    tx.commit().await.map_err(db)
}

/// Which way [`count_states`] moves files.
enum Count {
    In,
    Out,
}

/// Adds the files `seqs` of transfer `id`, as they stand now, to the counts of their states
/// (`transfer_states`), or takes them out.
async fn count_states(
    tx: &mut Transaction<'_, Any>,
    dialect: Dialect,
    id: &TransferId,
    seqs: impl ExactSizeIterator<Item = u64>,
    way: Count,
) -> Result<(), Error> {
    let sign = match way {
        Count::In => "",
        Count::Out => "-",
    };
    // Grouped by an expression of the state, not the column: by the column, SQLite walks
    // the transfer's every file in state order (index transfer_files_state) rather than
    // looking these up by their key.
    let sql = format!(
        "INSERT INTO transfer_states (transfer_id, state, files, bytes_done, attempts) \
         SELECT transfer_id, state || '', {sign}COUNT(*), {sign}SUM(bytes_done), {sign}SUM(attempts) \
         FROM transfer_files WHERE transfer_id = $1 AND seq IN ({}) GROUP BY transfer_id, state || '' \
         ON CONFLICT (transfer_id, state) DO UPDATE SET \
         files = transfer_states.files + excluded.files, \
         bytes_done = transfer_states.bytes_done + excluded.bytes_done, \
         attempts = transfer_states.attempts + excluded.attempts",
        placeholders(2, seqs.len())
    );
    let sql = positional(dialect, sql);
    let mut q = sqlx::query(&sql).bind(id.as_str());
    for seq in seqs {
        q = q.bind(seq as i64);
    }
    q.execute(&mut **tx).await.map_err(db)?;
    Ok(())
}

/// Binds where `f` stands: state, bytes_done, attempts, error, checksum, resume (the
/// order of [`TRANSFER_FILE_COLS`] after its first four).
fn bind_progress<'q>(q: AnyQuery<'q>, f: &'q TransferFile) -> AnyQuery<'q> {
    q.bind(f.state.as_str())
        .bind(f.bytes_done as i64)
        .bind(i64::from(f.attempts))
        .bind(f.error.as_ref().map(ToString::to_string))
        .bind(f.checksum.as_ref().map(Checksum::to_string))
        .bind(f.resume.as_deref())
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

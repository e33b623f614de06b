//! `weft audit`: who changed what in the zone, when and from where (administrators).

use super::output::{format_millis, print_json, Result};
use super::Ctx;
use clap::Args;
use weft_types::escape_controls;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only changes of this path and below it.
    path: Option<String>,
    /// Only changes this user made (`user#zone` for a federated zone's user, `zone` for the
    /// zone's own work).
    #[arg(long)]
    user: Option<String>,
    /// Only changes since then: `30m`, `12h`, `7d` ago, or a UTC time `2026-11-25`,
    /// `2026-11-25T08:00:00`.
    #[arg(long, value_parser = parse_since)]
    since: Option<i64>,
    /// Entries per page, newest first (1-1000).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    limit: u32,
    /// The page after the one that printed this cursor.
    #[arg(long)]
    cursor: Option<String>,
    /// Every page, not one.
    #[arg(long)]
    all: bool,
    /// Print JSON: `{"items": [...], "next_cursor": ...}` (with `--all`, one list).
    #[arg(long)]
    json: bool,
}

pub async fn audit(ctx: &Ctx, a: AuditArgs) -> Result {
    let path = match &a.path {
        Some(p) => Some(ctx.resolve(p).await?.to_string()),
        None => None,
    };
    let mut cursor = a.cursor.clone();
    let mut all = Vec::new();
    loop {
        let page = ctx
            .client
            .audit(
                path.as_deref(),
                a.user.as_deref(),
                a.since,
                cursor.as_deref(),
                a.limit,
            )
            .await?;
        if !a.all {
            if a.json {
                return print_json(&page);
            }
            print_entries(&page.items);
            if let Some(next) = &page.next_cursor {
                eprintln!("more: add --cursor {next} (or --all)");
            }
            return Ok(());
        }
        all.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if a.json {
        return print_json(&all);
    }
    print_entries(&all);
    Ok(())
}

fn print_entries(entries: &[weft_client::wire::AuditWire]) {
    for e in entries {
        let path = e.path.as_deref().unwrap_or("-");
        // Objects put together are one entry; a few of their names say which.
        let items = match e.items.len() {
            0 => String::new(),
            n if n <= 5 => format!(": {}", e.items.join(", ")),
            n => format!(": {}, ... ({} more)", e.items[..5].join(", "), n - 5),
        };
        // Escaped whole: a catalog from before labels and values were checked may hold a
        // newline (a forged entry) or an ESC (a terminal command) in any of them.
        let line = format!(
            "{}  {:<12} {:<24} {:<9} {path}  {}{items}",
            format_millis(e.at),
            e.actor,
            e.origin,
            e.action,
            e.detail
        );
        println!("{}", escape_controls(&line));
    }
}

/// `30m`/`12h`/`7d`/`45s` ago, or a UTC date or date and time; ms since the epoch.
fn parse_since(s: &str) -> std::result::Result<i64, String> {
    let now = chrono::Utc::now().timestamp_millis();
    let t = s.trim();
    if let Some((num, unit)) = t.char_indices().last().map(|(i, c)| (&t[..i], c)) {
        let per = match unit {
            's' => Some(1_000),
            'm' => Some(60_000),
            'h' => Some(3_600_000),
            'd' => Some(86_400_000),
            _ => None,
        };
        if let (Some(per), Ok(n)) = (per, num.parse::<i64>()) {
            return Ok(now - n.saturating_mul(per));
        }
    }
    let t = t.trim_end_matches('Z');
    let at = chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S"))
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight"))
        })
        .map_err(|_| format!("{s:?}: give 30m, 12h, 7d, or a UTC time like 2026-11-25T08:00:00"))?;
    Ok(at.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_ago_or_at() {
        let now = chrono::Utc::now().timestamp_millis();
        let h = parse_since("2h").unwrap();
        assert!((now - 2 * 3_600_000 - h).abs() < 5_000);
        assert_eq!(parse_since("2026-11-25").unwrap(), 1_795_564_800_000);
        assert_eq!(
            parse_since("2026-11-25T08:00:00Z").unwrap(),
            1_795_564_800_000 + 8 * 3_600_000
        );
        for bad in ["", "yesterday", "2h30", "2026-13-01", "-"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }
}

//! Policy files: rules of trigger → condition → actions, in TOML.
//!
//! ```toml
//! [[rule]]
//! name = "replicate-cryoem"     # [a-z0-9][a-z0-9_-]{0,62}, unique in the file
//! on = "created"                # "created" | "metadata" | "schedule" | "dataset_closed"
//! # attr = "publish"            # on = "metadata" only: just this attribute (optional)
//! # every = "1h"                # on = "schedule" only, and required there
//!
//! [rule.if]                     # all optional; all must hold
//! path = "/lrz/home/*/cryoem/**"   # glob over the logical path: * and ? within a component, ** any depth
//! min_size = "1 MiB"
//! max_size = "10 GiB"
//! meta = ["instrument=krios", "quality>3"]
//! zone = "lrz"                  # the object's zone
//! older_than = "7d"
//! younger_than = "30d"
//!
//! [rule.do]                     # at least one
//! extract = true                # read the file's header into metadata (mrc.*, tiff.*, ...)
//! set_meta = ["state=ingested"] # attr=value: sets the attribute
//! mint_pid = true
//! replicate = "zone != origin & tier = disk"
//! copies = 1                    # places replicate chooses (needs replicate; default 1)
//! evict = true                  # once replicated: remove the copies in the origin zone (needs replicate)
//! tier = "archive"              # a copy on a resource of this tier in the origin zone, then the others go
//! trim = "resource = scratch"   # remove copies at matching places (never the last good one)
//! delete_after = "30d"          # remove the object this long after its creation
//! webhook = "https://example.org/hook"
//! ```

use crate::{parse_duration, parse_size, Event, ObjectFacts, TargetExpr};
use serde::{Deserialize, Serialize};
use toml::Spanned;
use weft_types::{Error, ErrorCode, MetaCondition, ZoneName};

/// The rules of one policy file, in file order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySet {
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub name: String,
    pub trigger: Trigger,
    pub condition: Condition,
    /// In the order they run: extract, set_meta, mint_pid, replicate, tier, trim,
    /// delete_after, webhook.
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "on")]
pub enum Trigger {
    Created,
    /// A collection's dataset was closed (`weft dataset close`, `weft watch --close-on`):
    /// the condition holds for the collection; actions on copies (replicate, tier, trim,
    /// extract, delete_after) run for every object below it, the others (mint_pid,
    /// set_meta, webhook) for the collection.
    DatasetClosed,
    Metadata {
        attr: Option<String>,
    },
    Schedule {
        every_s: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Condition {
    pub path: Option<String>,
    pub min_size: Option<u64>,
    pub max_size: Option<u64>,
    pub meta: Vec<MetaCondition>,
    pub zone: Option<String>,
    pub older_than_s: Option<u64>,
    pub younger_than_s: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum Action {
    /// Read the object's header into its metadata (the zone's extractors).
    Extract,
    SetMeta {
        attr: String,
        value: String,
    },
    MintPid,
    Replicate {
        to: TargetExpr,
        copies: u32,
        evict: bool,
    },
    Tier {
        tier: String,
    },
    Trim {
        from: TargetExpr,
    },
    DeleteAfter {
        after_s: u64,
    },
    Webhook {
        url: String,
    },
}

impl Action {
    /// Whether, for a closed dataset, the action runs for every object below the
    /// collection (what it does is to copies or content) rather than for the collection.
    pub fn on_each_object(&self) -> bool {
        !matches!(
            self,
            Action::MintPid | Action::SetMeta { .. } | Action::Webhook { .. }
        )
    }
}

// --- the file as written --------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Spanned<String>,
    on: Spanned<String>,
    attr: Option<Spanned<String>>,
    every: Option<Spanned<String>>,
    #[serde(rename = "if")]
    cond: Option<RawIf>,
    #[serde(rename = "do")]
    act: Option<Spanned<RawDo>>,
}

/// A size as a number of bytes or a string with a unit.
enum RawSize {
    Bytes(i64),
    Text(String),
}

/// By hand rather than `untagged`, whose error ("did not match any variant") helps nobody.
impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawSize;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a size: whole bytes such as 4096, or text such as \"100 MiB\"")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(n))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<RawSize, E> {
                i64::try_from(n)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::custom(format!("{n} bytes is too large a size")))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(s.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIf {
    path: Option<Spanned<String>>,
    min_size: Option<Spanned<RawSize>>,
    max_size: Option<Spanned<RawSize>>,
    meta: Option<Vec<Spanned<String>>>,
    zone: Option<Spanned<String>>,
    older_than: Option<Spanned<String>>,
    younger_than: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDo {
    extract: Option<Spanned<bool>>,
    set_meta: Option<Vec<Spanned<String>>>,
    mint_pid: Option<Spanned<bool>>,
    replicate: Option<Spanned<String>>,
    copies: Option<Spanned<i64>>,
    evict: Option<Spanned<bool>>,
    tier: Option<Spanned<String>>,
    trim: Option<Spanned<String>>,
    delete_after: Option<Spanned<String>>,
    webhook: Option<Spanned<String>>,
}

/// Turns byte offsets into `line N: rule "x": field: ...` messages.
struct Ctx<'a> {
    text: &'a str,
    rule: Option<String>,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1
    }

    fn at<T>(&self, spanned: &Spanned<T>, field: &str, why: impl std::fmt::Display) -> Error {
        let rule = self
            .rule
            .as_ref()
            .map_or(String::new(), |r| format!("rule {r:?}: "));
        Error::new(
            ErrorCode::InvalidPolicy,
            format!("line {}: {rule}{field}: {why}", self.line(spanned.span().start)),
        )
    }
}

fn valid_rule_name(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn valid_tier(s: &str) -> bool {
    valid_rule_name(s)
}

impl PolicySet {
    /// Parses and validates a policy file. Errors: `invalid_policy`, with a message of the
    /// form `line 12: rule "x": do.replicate: ...` (syntax errors, unknown or missing fields,
    /// wrong types, bad expressions, sizes, durations, globs or names, duplicate rule names,
    /// options that need another (`evict`/`copies` without `replicate`, `every` without
    /// `schedule`), no action, an empty file).
    pub fn parse(text: &str) -> Result<PolicySet, Error> {
        let raw: RawFile = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        if raw.rule.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidPolicy,
                "the policy file has no rule: start one with [[rule]]",
            ));
        }
        let mut rules: Vec<Rule> = Vec::new();
        for r in &raw.rule {
            let rule = convert(text, r.get_ref())?;
            if rules.iter().any(|x| x.name == rule.name) {
                let ctx = Ctx { text, rule: None };
                return Err(ctx.at(
                    &r.get_ref().name,
                    "name",
                    format!("a second rule is named {:?}", rule.name),
                ));
            }
            rules.push(rule);
        }
        Ok(PolicySet { rules })
    }

    /// The rules `event` on the object fires, in file order.
    pub fn fired<'a>(&'a self, event: &Event, object: &ObjectFacts<'_>) -> Vec<&'a Rule> {
        with_components(object.path, |comps| {
            self.rules
                .iter()
                .filter(|r| r.fires_split(event, object, comps))
                .collect()
        })
    }
}

/// toml's message, on one line, after the line and (when the error is at a value) the field.
fn toml_error(text: &str, e: &toml::de::Error) -> Error {
    let ctx = Ctx { text, rule: None };
    let message = e.message().trim().replace('\n', "; ");
    let at = e.span().map_or(String::new(), |s| {
        let field = field_before(text, s.start).map_or(String::new(), |f| format!("{f}: "));
        format!("line {}: {field}", ctx.line(s.start))
    });
    Error::new(ErrorCode::InvalidPolicy, format!("{at}{message}"))
}

/// The key a value at `offset` is assigned to (`mint_pid = "yes"`), qualified by its table
/// (`do.mint_pid`) as in the other messages; `None` when `offset` is not at a value.
fn field_before(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let key = before[line_start..].trim_end().strip_suffix('=')?.trim_end();
    let key = key
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .next()
        .filter(|k| !k.is_empty())?;
    // Keys inside an inline table (`do = { mint_pid = 1 }`) are named without their table.
    let inline = before[line_start..].contains('{');
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|h| h.trim_matches(|c| c == '[' || c == ']').trim());
    Some(match table.and_then(|t| t.strip_prefix("rule.")) {
        Some(t) if !inline => format!("{t}.{key}"),
        _ => key.to_owned(),
    })
}

fn convert(text: &str, r: &RawRule) -> Result<Rule, Error> {
    let mut ctx = Ctx { text, rule: None };
    let name = r.name.get_ref().clone();
    if !valid_rule_name(&name) {
        return Err(ctx.at(
            &r.name,
            "name",
            format!("{name:?} is not a rule name: lower-case letters, digits, '_' and '-', at most 63"),
        ));
    }
    ctx.rule = Some(name.clone());
    let trigger = trigger(&ctx, r)?;
    let condition = match &r.cond {
        Some(c) => condition(&ctx, c)?,
        None => Condition::default(),
    };
    let actions = match &r.act {
        Some(a) => actions(&ctx, a)?,
        None => Vec::new(),
    };
    if actions.is_empty() {
        return Err(ctx.at(
            &r.name,
            "do",
            "the rule has no action: add a [rule.do] table with one",
        ));
    }
    Ok(Rule {
        name,
        trigger,
        condition,
        actions,
    })
}

fn trigger(ctx: &Ctx, r: &RawRule) -> Result<Trigger, Error> {
    let t = match r.on.get_ref().as_str() {
        "created" => Trigger::Created,
        "dataset_closed" => Trigger::DatasetClosed,
        "metadata" => Trigger::Metadata {
            attr: r.attr.as_ref().map(|a| a.get_ref().clone()),
        },
        "schedule" => {
            let every = r.every.as_ref().ok_or_else(|| {
                ctx.at(
                    &r.on,
                    "every",
                    "a schedule rule needs `every`, e.g. every = \"1h\"",
                )
            })?;
            let d = parse_duration(every.get_ref()).map_err(|e| ctx.at(every, "every", e.message))?;
            Trigger::Schedule { every_s: d.as_secs() }
        }
        other => {
            return Err(ctx.at(
                &r.on,
                "on",
                format!(
                    "{other:?} is not a trigger: use \"created\", \"metadata\", \"schedule\" or \"dataset_closed\""
                ),
            ))
        }
    };
    if let (Some(attr), false) = (&r.attr, matches!(t, Trigger::Metadata { .. })) {
        return Err(ctx.at(attr, "attr", "only a rule with on = \"metadata\" takes `attr`"));
    }
    if let Some(a) = &r.attr {
        weft_types::meta::validate_avu_part("attribute", a.get_ref())
            .map_err(|e| ctx.at(a, "attr", e.message))?;
    }
    if let (Some(every), false) = (&r.every, matches!(t, Trigger::Schedule { .. })) {
        return Err(ctx.at(every, "every", "only a rule with on = \"schedule\" takes `every`"));
    }
    Ok(t)
}

fn size(ctx: &Ctx, v: &Spanned<RawSize>, field: &str) -> Result<u64, Error> {
    match v.get_ref() {
        RawSize::Bytes(n) if *n >= 0 => Ok(*n as u64),
        RawSize::Bytes(n) => Err(ctx.at(v, field, format!("{n} is negative"))),
        RawSize::Text(t) => parse_size(t).map_err(|e| ctx.at(v, field, e.message)),
    }
}

fn seconds(ctx: &Ctx, v: &Spanned<String>, field: &str) -> Result<u64, Error> {
    parse_duration(v.get_ref())
        .map(|d| d.as_secs())
        .map_err(|e| ctx.at(v, field, e.message))
}

fn condition(ctx: &Ctx, c: &RawIf) -> Result<Condition, Error> {
    let mut out = Condition::default();
    if let Some(p) = &c.path {
        check_glob(p.get_ref()).map_err(|why| ctx.at(p, "if.path", why))?;
        out.path = Some(p.get_ref().clone());
    }
    if let Some(v) = &c.min_size {
        out.min_size = Some(size(ctx, v, "if.min_size")?);
    }
    if let Some(v) = &c.max_size {
        out.max_size = Some(size(ctx, v, "if.max_size")?);
        if out.min_size > out.max_size {
            return Err(ctx.at(v, "if.max_size", "is below min_size: no object can match"));
        }
    }
    for m in c.meta.iter().flatten() {
        out.meta
            .push(MetaCondition::parse(m.get_ref()).map_err(|e| ctx.at(m, "if.meta", e.message))?);
    }
    if let Some(z) = &c.zone {
        ZoneName::parse(z.get_ref()).map_err(|e| ctx.at(z, "if.zone", e.message))?;
        out.zone = Some(z.get_ref().clone());
    }
    if let Some(v) = &c.older_than {
        out.older_than_s = Some(seconds(ctx, v, "if.older_than")?);
    }
    if let Some(v) = &c.younger_than {
        let young = seconds(ctx, v, "if.younger_than")?;
        if out.older_than_s.is_some_and(|old| old >= young) {
            return Err(ctx.at(
                v,
                "if.younger_than",
                "is not above older_than: no object can match",
            ));
        }
        out.younger_than_s = Some(young);
    }
    Ok(out)
}

fn expr(ctx: &Ctx, v: &Spanned<String>, field: &str) -> Result<TargetExpr, Error> {
    TargetExpr::parse(v.get_ref()).map_err(|e| ctx.at(v, field, e.message))
}

fn actions(ctx: &Ctx, d: &Spanned<RawDo>) -> Result<Vec<Action>, Error> {
    let a = d.get_ref();
    let mut out = Vec::new();
    if a.extract.as_ref().is_some_and(|e| *e.get_ref()) {
        out.push(Action::Extract);
    }
    for m in a.set_meta.iter().flatten() {
        let (attr, value) = m
            .get_ref()
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .ok_or_else(|| ctx.at(m, "do.set_meta", format!("{:?} is not attr=value", m.get_ref())))?;
        for (what, part) in [("attribute", attr), ("value", value)] {
            weft_types::meta::validate_avu_part(what, part)
                .map_err(|e| ctx.at(m, "do.set_meta", e.message))?;
        }
        out.push(Action::SetMeta {
            attr: attr.to_owned(),
            value: value.to_owned(),
        });
    }
    if a.mint_pid.as_ref().is_some_and(|m| *m.get_ref()) {
        out.push(Action::MintPid);
    }
    match &a.replicate {
        Some(r) => {
            let to = expr(ctx, r, "do.replicate")?;
            let copies = match &a.copies {
                Some(c) if (1..=16).contains(c.get_ref()) => *c.get_ref() as u32,
                Some(c) => {
                    return Err(ctx.at(c, "do.copies", format!("{} is not from 1 to 16", c.get_ref())))
                }
                None => 1,
            };
            let evict = a.evict.as_ref().is_some_and(|e| *e.get_ref());
            out.push(Action::Replicate { to, copies, evict });
        }
        None => {
            if let Some(c) = &a.copies {
                return Err(ctx.at(c, "do.copies", "needs `replicate` in the same rule"));
            }
            if let Some(e) = &a.evict {
                return Err(ctx.at(
                    e,
                    "do.evict",
                    "needs `replicate` in the same rule (evict once replicated)",
                ));
            }
        }
    }
    if let Some(t) = &a.tier {
        if !valid_tier(t.get_ref()) {
            return Err(ctx.at(t, "do.tier", format!("{:?} is not a tier name", t.get_ref())));
        }
        out.push(Action::Tier {
            tier: t.get_ref().clone(),
        });
    }
    if let Some(t) = &a.trim {
        out.push(Action::Trim {
            from: expr(ctx, t, "do.trim")?,
        });
    }
    if let Some(v) = &a.delete_after {
        out.push(Action::DeleteAfter {
            after_s: seconds(ctx, v, "do.delete_after")?,
        });
    }
    if let Some(w) = &a.webhook {
        let url = w.get_ref();
        let ok = (url.starts_with("http://") || url.starts_with("https://"))
            && url.len() > "https://".len()
            && !url.chars().any(|c| c.is_whitespace() || c.is_control());
        if !ok {
            return Err(ctx.at(
                w,
                "do.webhook",
                format!("{url:?} is not an http:// or https:// URL"),
            ));
        }
        out.push(Action::Webhook { url: url.clone() });
    }
    Ok(out)
}

/// A path glob: absolute, no empty, `.` or `..` components, `**` only as a whole component.
fn check_glob(g: &str) -> Result<(), String> {
    let rest = g
        .strip_prefix('/')
        .ok_or_else(|| format!("{g:?} must start with / (a logical path such as /zone/home/*/data/**)"))?;
    for c in rest.split('/') {
        match c {
            "" => return Err(format!("{g:?} has an empty component")),
            "." | ".." => return Err(format!("{g:?} has a {c:?} component")),
            "**" => {}
            c if c.contains("**") => {
                return Err(format!("{g:?}: ** must be a whole component, as in /a/**/b"))
            }
            c if c.contains('\0') => return Err(format!("{g:?} holds a NUL character")),
            _ => {}
        }
    }
    Ok(())
}

/// `*` and `?` within one component. Runs once per rule and component for every event, so
/// literal components compare directly and ASCII ones without allocating.
pub fn component_matches(pat: &str, s: &str) -> bool {
    if !pat.contains(['*', '?']) {
        return pat == s;
    }
    if pat.is_ascii() && s.is_ascii() {
        return wildcard(pat.as_bytes(), s.as_bytes(), b'*', b'?');
    }
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    wildcard(&p, &t, '*', '?')
}

/// Classic two-pointer wildcard match with backtracking to the last `*`: linear-ish.
fn wildcard<T: Copy + PartialEq>(p: &[T], t: &[T], star_sym: T, one: T) -> bool {
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && (p[i] == one || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == star_sym {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == star_sym)
}

/// Whether the logical path `path` matches the glob; a trailing `**` needs at least one
/// component (`/a/**` is what is inside `/a`, not `/a` itself).
#[cfg(test)]
fn glob_matches(glob: &str, path: &str) -> bool {
    with_components(path, |comps| glob_matches_split(glob, comps))
}

/// `f` of the components of `path`, split once (on the stack for up to 64 of them): the
/// path is matched against every rule of every event.
fn with_components<R>(path: &str, f: impl FnOnce(&[&str]) -> R) -> R {
    let path = path.trim_start_matches('/');
    let mut buf = [""; 64];
    let mut n = 0;
    for c in path.split('/') {
        if n == buf.len() {
            return f(&path.split('/').collect::<Vec<_>>());
        }
        buf[n] = c;
        n += 1;
    }
    f(&buf[..n])
}

fn glob_matches_split(glob: &str, comps: &[&str]) -> bool {
    let glob = glob.trim_start_matches('/');
    if !glob.split('/').any(|c| c == "**") {
        // Without `**` the components pair up one to one.
        let mut n = 0;
        for p in glob.split('/') {
            match comps.get(n) {
                Some(c) if component_matches(p, c) => n += 1,
                _ => return false,
            }
        }
        return n == comps.len();
    }
    if comps.len() < 63 {
        return globstar_bits(glob, comps);
    }
    let pat: Vec<&str> = glob.split('/').collect();
    // reach[j]: the pattern components so far can match the first j path components. One
    // pass per pattern component: O(pattern × path) whatever the wildcards.
    let mut reach = vec![false; comps.len() + 1];
    let mut next = vec![false; comps.len() + 1];
    reach[0] = true;
    for (i, p) in pat.iter().enumerate() {
        next[0] = false;
        if *p == "**" {
            // Only a trailing `**` needs a component: `/a/**` is below `/a`, not `/a` itself.
            let least = usize::from(i + 1 == pat.len());
            let mut any = false;
            for j in 0..=comps.len() {
                if j >= least {
                    any |= reach[j - least];
                }
                next[j] = any;
            }
        } else {
            for j in 1..=comps.len() {
                next[j] = reach[j - 1] && component_matches(p, comps[j - 1]);
            }
        }
        std::mem::swap(&mut reach, &mut next);
    }
    reach[comps.len()]
}

/// The matcher above for paths under 63 components, with the `reach` row as the bits of
/// one word: no allocation.
fn globstar_bits(glob: &str, comps: &[&str]) -> bool {
    let depth = comps.len();
    let all: u64 = (1u64 << (depth + 1)) - 1;
    let mut reach: u64 = 1;
    let mut pat = glob.split('/').peekable();
    while let Some(p) = pat.next() {
        reach = if p == "**" {
            // Every j at or after the first reachable one (after it, for a trailing `**`).
            let from = if pat.peek().is_none() { reach << 1 } else { reach };
            if from == 0 {
                0
            } else {
                !((from & from.wrapping_neg()) - 1)
            }
        } else {
            let mut next = 0u64;
            for (j, c) in comps.iter().enumerate() {
                if reach & (1 << j) != 0 && component_matches(p, c) {
                    next |= 1 << (j + 1);
                }
            }
            next
        } & all;
        if reach == 0 {
            return false;
        }
    }
    reach & (1 << depth) != 0
}

impl Rule {
    /// Whether the trigger answers `event` (`Tick` only schedule rules; `MetadataSet` only
    /// metadata rules for that attribute or any) and the condition holds.
    pub fn fires(&self, event: &Event, object: &ObjectFacts<'_>) -> bool {
        with_components(object.path, |comps| self.fires_split(event, object, comps))
    }

    fn fires_split(&self, event: &Event, object: &ObjectFacts<'_>, comps: &[&str]) -> bool {
        let answers = match (&self.trigger, event) {
            (Trigger::Created, Event::Created) => true,
            (Trigger::Metadata { attr }, Event::MetadataSet { attr: set }) => {
                attr.as_ref().is_none_or(|a| a == set)
            }
            (Trigger::Schedule { .. }, Event::Tick) => true,
            (Trigger::DatasetClosed, Event::DatasetClosed) => true,
            _ => false,
        };
        answers && self.condition.matches_split(object, comps)
    }
}

impl Condition {
    pub fn matches(&self, object: &ObjectFacts<'_>) -> bool {
        with_components(object.path, |comps| self.matches_split(object, comps))
    }

    fn matches_split(&self, object: &ObjectFacts<'_>, comps: &[&str]) -> bool {
        // Whole seconds, rounded down: `age >= older_than` and `age < younger_than` both
        // stay exact when the limits are whole seconds.
        let age_s = object.now_ms.saturating_sub(object.created_ms).max(0) as u64 / 1000;
        self.path.as_ref().is_none_or(|g| glob_matches_split(g, comps))
            && self.min_size.is_none_or(|m| object.size >= m)
            && self.max_size.is_none_or(|m| object.size <= m)
            && self.zone.as_ref().is_none_or(|z| z == object.zone)
            && self.older_than_s.is_none_or(|s| age_s >= s)
            && self.younger_than_s.is_none_or(|s| age_s < s)
            && self.meta.iter().all(|c| {
                object
                    .meta
                    .iter()
                    .any(|(attr, value)| attr == &c.attr && meta_holds(c, value))
            })
    }

    /// The deepest collection every matching path lies below (the glob's components before
    /// the first wildcard), e.g. `/lrz/home` for `/lrz/home/*/cryoem/**`; `None` without
    /// a path condition; `/` when the zone component is a wildcard (`/*/home/**`).
    pub fn root(&self) -> Option<String> {
        let glob = self.path.as_ref()?;
        let comps: Vec<&str> = glob.trim_start_matches('/').split('/').collect();
        let literal = comps.iter().take_while(|c| !c.contains(['*', '?'])).count();
        // A glob without wildcards names the object itself: its collection is the root. The
        // zone stays when literal, so the root is always inside one zone but for `/*/...`.
        let keep = literal.min(comps.len().saturating_sub(1)).max(literal.min(1));
        Some(format!("/{}", comps[..keep].join("/")))
    }
}

fn meta_holds(c: &MetaCondition, value: &str) -> bool {
    use weft_types::MetaOp;
    match c.op {
        MetaOp::Eq => value == c.value,
        MetaOp::Ne => value != c.value,
        op => match (
            weft_types::meta::parse_number(value),
            weft_types::meta::parse_number(&c.value),
        ) {
            (Some(v), Some(w)) => match op {
                MetaOp::Lt => v < w,
                MetaOp::Le => v <= w,
                MetaOp::Gt => v > w,
                _ => v >= w,
            },
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_components() {
        for (glob, path, want) in [
            ("/lrz/**", "/lrz/a", true),
            ("/lrz/**", "/lrz/a/b", true),
            ("/lrz/**", "/lrz", false),
            ("/lrz/**", "/lrzx/a", false),
            ("/lrz/*", "/lrz/a", true),
            ("/lrz/*", "/lrz/a/b", false),
            ("/lrz/*.tif", "/lrz/x.tif", true),
            ("/lrz/*.tif", "/lrz/.tif", true),
            ("/lrz/*.tif", "/lrz/x.tiff", false),
            ("/lrz/?", "/lrz/a", true),
            ("/lrz/?", "/lrz/ab", false),
            ("/lrz/a?c", "/lrz/a/c", false),
            ("/lrz/**/x", "/lrz/x", true),
            ("/lrz/**/x", "/lrz/a/b/x", true),
            ("/lrz/**/x", "/lrz/a/b/y", false),
            ("/a/**/b/**", "/a/b/c", true),
            ("/a/**/b/**", "/a/q/b/c/d", true),
            ("/a/**/b/**", "/a/b", false),
            ("/a/**/**", "/a/b", true),
            ("/**", "/lrz", true),
            ("/*/home/**", "/it4i/home/u/f", true),
            ("/lrz/home", "/lrz/home", true),
            ("/lrz/home", "/lrz/home/x", false),
            ("/l*z/h*e/*", "/lrz/home/f", true),
            ("/é/*", "/é/ü", true),
        ] {
            assert_eq!(glob_matches(glob, path), want, "{glob} on {path}");
        }
    }

    /// The obvious exponential matcher, as the specification of the fast one.
    fn reference(pat: &[&str], comps: &[&str]) -> bool {
        fn component(p: &[char], s: &[char]) -> bool {
            match p.split_first() {
                None => s.is_empty(),
                Some(('*', rest)) => (0..=s.len()).any(|k| component(rest, &s[k..])),
                Some((c, rest)) => s
                    .split_first()
                    .is_some_and(|(h, t)| (*c == '?' || c == h) && component(rest, t)),
            }
        }
        match pat.split_first() {
            None => comps.is_empty(),
            Some((&"**", [])) => !comps.is_empty(),
            Some((&"**", rest)) => (0..=comps.len()).any(|k| reference(rest, &comps[k..])),
            Some((p, rest)) => comps.split_first().is_some_and(|(c, t)| {
                let (p, c): (Vec<char>, Vec<char>) = (p.chars().collect(), c.chars().collect());
                component(&p, &c) && reference(rest, t)
            }),
        }
    }

    #[test]
    fn globs_agree_with_the_reference_matcher() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let pat_comps = ["**", "*", "a", "b", "a*", "*b", "?", "a?b", "*a*"];
        let path_comps = ["a", "b", "ab", "aab", "ba", "x"];
        for _ in 0..5000 {
            let pat: Vec<&str> = (0..1 + next(4))
                .map(|_| pat_comps[next(pat_comps.len())])
                .collect();
            let comps: Vec<&str> = (0..1 + next(5))
                .map(|_| path_comps[next(path_comps.len())])
                .collect();
            let (glob, path) = (format!("/{}", pat.join("/")), format!("/{}", comps.join("/")));
            assert_eq!(
                glob_matches(&glob, &path),
                reference(&pat, &comps),
                "{glob} on {path}"
            );
        }
    }

    #[test]
    fn deep_paths_match_on_both_sides_of_the_word_limit() {
        for depth in [61, 62, 63, 64, 100] {
            let path = format!("/{}/x.h5", vec!["d"; depth - 1].join("/"));
            assert!(glob_matches("/d/**/*.h5", &path), "{depth}");
            assert!(glob_matches("/**", &path), "{depth}");
            assert!(!glob_matches("/d/**/d", &path), "{depth}");
            assert!(!glob_matches("/e/**", &path), "{depth}");
        }
    }

    #[test]
    fn hostile_globs_stay_fast() {
        let long = format!("/{}", vec!["a"; 200].join("/"));
        let glob = format!("/{}/b", vec!["**"; 100].join("/"));
        assert!(!glob_matches(&glob, &long));
        let name = format!("/{}", "a".repeat(5000));
        assert!(!glob_matches(&format!("/{}b", "*a".repeat(50)), &name));
    }

    #[test]
    fn globs_are_checked() {
        check_glob("/lrz/home/*/cryoem/**").unwrap();
        check_glob("/**").unwrap();
        for (bad, says) in [
            ("lrz/x", "start with /"),
            ("", "start with /"),
            ("/", "empty component"),
            ("/lrz//x", "empty component"),
            ("/lrz/x/", "empty component"),
            ("/lrz/./x", "\".\""),
            ("/lrz/../x", "\"..\""),
            ("/lrz/a**", "whole component"),
            ("/lrz/***", "whole component"),
            ("/lrz/a\0b", "NUL"),
        ] {
            let why = check_glob(bad).unwrap_err();
            assert!(why.contains(says), "{bad:?}: {why}");
        }
    }

    #[test]
    fn fields_are_found_before_values() {
        let text = "[[rule]]\nname = \"r\"\n[rule.do]\nmint_pid = \"yes\"\ndo = { tier = 3 }\n";
        let at = |needle: &str| text.find(needle).unwrap();
        assert_eq!(field_before(text, at("\"r\"")).as_deref(), Some("name"));
        assert_eq!(field_before(text, at("\"yes\"")).as_deref(), Some("do.mint_pid"));
        assert_eq!(field_before(text, at("3 }")).as_deref(), Some("tier"));
        assert_eq!(field_before(text, at("mint_pid")), None);
    }
}

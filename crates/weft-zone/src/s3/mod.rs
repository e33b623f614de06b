//! The use cases behind the S3 gateway: access keys (which act as their user), buckets
//! (collections an administrator declared, and each user's home), listings in S3's key
//! order, and what S3 clients need of an object besides its bytes (ETag, content type).
//! The protocol itself is weft-api's; every check is here, as for REST.

pub use weft_catalog::{S3Attrs, S3Key, S3Listed, S3Write, S3_META_UNIT};

use crate::{Caller, Zone};
use rand::RngCore;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_catalog::{Avu, Node, PrincipalId, PrincipalKind, S3Bucket};
use weft_types::{Checksum, Error, ErrorCode, LogicalPath, NodeKind, Permission, PrincipalName};

use std::sync::Arc;
/// The zone's S3 keys, buckets and objects as S3 sees them; borrowed from the zone with [`Zone::s3`].
#[derive(Clone, Copy)]
pub struct S3<'a> {
    pub(crate) zone: &'a Arc<Zone>,
}

/// The group whose ACL grants are what anonymous S3 requests may do. `weft s3 bucket add
/// --public-read` grants it `read` on the bucket's collection.
pub const ANONYMOUS: &str = "anonymous";

/// Home buckets are `home-<user>`; declared buckets may not look like one.
pub const HOME_BUCKET_PREFIX: &str = "home-";

/// The most access keys a user holds.
pub const S3_KEYS_PER_USER: usize = 32;

/// Listings return at most this many keys per page, as S3 does.
pub const S3_LIST_MAX: usize = 1000;

/// Rows a listing with a delimiter fetches at a time.
const ROLLED_FETCH: usize = 64;

/// The least string greater than every string that starts with `s` (code point order is
/// UTF-8's byte order), or `None` when there is none (`s` is all U+10FFFF).
pub(crate) fn successor(s: &str) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    while let Some(c) = chars.pop() {
        let next = match c as u32 + 1 {
            0xD800 => 0xE000, // no surrogates in a str
            n => n,
        };
        if let Some(next) = char::from_u32(next) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// A bucket declared in the configuration file (`[[s3.buckets]]`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketSpec {
    pub name: String,
    pub path: LogicalPath,
    #[serde(default)]
    pub public_read: bool,
}

/// A new access key: the secret is shown once.
pub struct NewS3Key {
    pub key: S3Key,
    pub secret: String,
    /// The user's home bucket.
    pub home_bucket: String,
}

/// A bucket as a caller sees it.
#[derive(Debug, Clone)]
pub struct BucketInfo {
    pub name: String,
    pub path: LogicalPath,
    pub public_read: bool,
    /// When it was declared; for a home bucket, when the home was made.
    pub created: weft_types::Millis,
    /// A user's home rather than a declared bucket.
    pub home: bool,
}

/// One page of a listing: objects (key relative to the bucket) and common prefixes, in
/// key order, and the key a next page starts after.
#[derive(Debug, Default)]
pub struct S3Page {
    pub objects: Vec<(String, S3Listed)>,
    pub prefixes: Vec<String>,
    pub truncated: bool,
    /// The last key or common prefix of this page.
    pub last: Option<String>,
}

/// An object as HEAD and GET need it.
#[derive(Debug, Clone)]
pub struct S3Object {
    pub node: Node,
    /// The ETag: the registered one while the content is unchanged, else the BLAKE3 hex.
    pub etag: String,
    pub content_type: Option<String>,
    pub meta: Vec<Avu>,
    /// The sizes of its parts, in order: several for an object completed from a multipart
    /// upload, else one, the whole.
    pub parts: Vec<u64>,
}

/// Access keys recently used, with their secret and caller, and buckets recently named,
/// so that a request costs no catalog round trip to authenticate and find its bucket.
/// Emptied by any change that empties the token cache, and by changes to buckets.
#[derive(Default)]
pub(crate) struct KeyCache {
    entries: Mutex<HashMap<String, (u64, Instant, String, Caller)>>,
    /// Bucket names and their collections, as briefly (a `weft mv` of a bucket's
    /// collection shows within this lifetime).
    buckets: Mutex<HashMap<String, (u64, Instant, LogicalPath)>>,
}

/// The longest object key S3 allows, in bytes.
pub const S3_KEY_MAX: usize = 1024;

const KEY_CACHE_LIFETIME: Duration = Duration::from_secs(5);
const KEY_CACHE_SIZE: usize = 10_000;

/// What follows [`HOME_BUCKET_PREFIX`] in a hashed home bucket's name: a `-`, which no
/// user name starts with, so that no user's plain name spells another user's hashed one.
const HASHED_HOME_MARK: char = '-';

/// `home-<user>` when that is a valid bucket name, else `home--` and 16 hex digits of the
/// user's BLAKE3 (names with `_`, `#`, `..` or over 58 bytes). The two forms never meet:
/// a user name starts with a letter or `_`, never with the `-` of the hashed form, so the
/// mapping from users to buckets is one-to-one by construction.
pub fn home_bucket(user: &PrincipalName) -> String {
    let plain = format!("{HOME_BUCKET_PREFIX}{user}");
    if bucket_name_error(&plain).is_none() {
        return plain;
    }
    let h = blake3::hash(user.as_str().as_bytes()).to_hex();
    format!("{HOME_BUCKET_PREFIX}{HASHED_HOME_MARK}{}", &h[..16])
}

/// Why `name` is not a bucket name S3 clients accept (3-63 of `[a-z0-9.-]`, starting and
/// ending with a letter or digit, no `..`, not an IP address).
pub fn bucket_name_error(name: &str) -> Option<String> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&name.len()) {
        return Some(format!("bucket name {name:?} must have 3 to 63 characters"));
    }
    if !name.chars().all(ok_char) || !edge(name.chars().next()) || !edge(name.chars().last()) {
        return Some(format!(
            "bucket name {name:?} may hold only a-z, 0-9, '.' and '-', and must start and end with a letter or digit"
        ));
    }
    if name.contains("..") || name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some(format!(
            "bucket name {name:?} may not hold '..' or be an IP address"
        ));
    }
    None
}

fn random_text(alphabet: &[u8], len: usize) -> String {
    let mut bytes = vec![0u8; len];
    rand::thread_rng().fill_bytes(&mut bytes);
    // 256 is a multiple of both alphabets' sizes (32, 64): no bias.
    bytes
        .iter()
        .map(|b| alphabet[*b as usize % alphabet.len()] as char)
        .collect()
}

/// The one answer to a home bucket that is nobody's, or that the caller can reach no part
/// of.
fn not_your_home(name: &str) -> Error {
    Error::forbidden(format!("bucket {name} is not a home you may use"))
}

/// Whether `caller` may manage the keys of `owner`.
fn may_manage(caller: &Caller, owner: &PrincipalName) -> bool {
    caller.is_admin || *owner == caller.name
}

impl S3<'_> {
    /// A new access key for `user` (default: the caller; another user needs an admin).
    pub async fn create_key(self, caller: &Caller, user: Option<&PrincipalName>) -> Result<NewS3Key, Error> {
        if let Some(zone) = &caller.via_zone {
            return Err(Error::forbidden(format!(
                "{} acts through zone {zone}; S3 keys are for this zone's own users",
                caller.name
            )));
        }
        let name = user.unwrap_or(&caller.name);
        if !may_manage(caller, name) {
            caller.require_admin("creating an S3 key for another user")?;
        }
        let principal = self
            .zone
            .catalog
            .get_principal(name)
            .await?
            .ok_or_else(|| Error::not_found(format!("user {name}")))?;
        if principal.kind != PrincipalKind::User {
            return Err(Error::invalid(format!(
                "{name} is a group; S3 keys belong to users"
            )));
        }
        // Servers creating keys at the same instant may each pass: the bound holds within
        // a few, which is all it is for (no user grows the table without end).
        let held = self.zone.catalog.s3_keys(Some(principal.id)).await?.len();
        if held >= S3_KEYS_PER_USER {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{name} holds {held} access keys, the most a user may ({S3_KEYS_PER_USER}); \
                     remove one with `weft s3 key rm`"
                ),
            ));
        }
        // 20 characters like AWS's, 100 random bits; the secret has 240.
        let access_key = format!("WEFT{}", random_text(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
        let secret = random_text(
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            40,
        );
        let key = self
            .zone
            .catalog
            .create_s3_key(&access_key, principal.id, &secret)
            .await?;
        Ok(NewS3Key {
            home_bucket: home_bucket(&key.user),
            key,
            secret,
        })
    }

    /// The caller's keys; an administrator's `user` (or everyone's, with `all`).
    pub async fn keys(
        self,
        caller: &Caller,
        user: Option<&PrincipalName>,
        all: bool,
    ) -> Result<Vec<S3Key>, Error> {
        if all {
            caller.require_admin("listing every user's S3 keys")?;
            return self.zone.catalog.s3_keys(None).await;
        }
        let name = user.unwrap_or(&caller.name);
        if !may_manage(caller, name) {
            caller.require_admin("listing another user's S3 keys")?;
        }
        let principal = self
            .zone
            .catalog
            .get_principal(name)
            .await?
            .ok_or_else(|| Error::not_found(format!("user {name}")))?;
        self.zone.catalog.s3_keys(Some(principal.id)).await
    }

    /// Removes a key of the caller's (any, for an administrator). Another user's key is
    /// `not_found`, as if absent.
    pub async fn remove_key(self, caller: &Caller, access_key: &str) -> Result<(), Error> {
        let missing = || Error::not_found(format!("S3 key {access_key}"));
        let (key, _) = self
            .zone
            .catalog
            .s3_secret(access_key)
            .await?
            .ok_or_else(missing)?;
        if !may_manage(caller, &key.user) {
            return Err(missing());
        }
        self.zone.catalog.delete_s3_key(access_key).await?;
        self.zone.auth_cache.invalidate();
        Ok(())
    }

    /// The secret of `access_key` and the caller it acts as; `None` for an unknown key.
    pub async fn key_caller(self, access_key: &str) -> Result<Option<(String, Caller)>, Error> {
        let generation = self.zone.auth_cache.generation();
        {
            let entries = self.zone.s3_keys.entries.lock().expect("not poisoned");
            if let Some((g, at, secret, caller)) = entries.get(access_key) {
                if *g == generation && at.elapsed() < KEY_CACHE_LIFETIME {
                    return Ok(Some((secret.clone(), caller.clone())));
                }
            }
        }
        let Some((key, secret)) = self.zone.catalog.s3_secret(access_key).await? else {
            return Ok(None);
        };
        let user = self
            .zone
            .catalog
            .get_principal(&key.user)
            .await?
            .ok_or_else(|| Error::not_found(format!("user {}", key.user)))?;
        // What is public is readable with a key too.
        let anonymous = self.anonymous_caller().await?.principal_ids;
        let caller = self.zone.access().caller_for(&user, &anonymous).await?;
        let mut entries = self.zone.s3_keys.entries.lock().expect("not poisoned");
        if entries.len() >= KEY_CACHE_SIZE {
            entries.clear();
        }
        entries.insert(
            access_key.to_owned(),
            (generation, Instant::now(), secret.clone(), caller.clone()),
        );
        Ok(Some((secret, caller)))
    }

    /// Who an unsigned request acts as: the group [`ANONYMOUS`], which holds only what
    /// ACLs grant it (nothing, until a bucket is declared public-read).
    pub async fn anonymous_caller(self) -> Result<Caller, Error> {
        let name = PrincipalName::parse(ANONYMOUS)?;
        let ids = match self.zone.catalog.get_principal(&name).await? {
            Some(p) if p.kind == PrincipalKind::Group => vec![p.id],
            _ => Vec::new(),
        };
        Ok(Caller {
            user_id: ids.first().copied().unwrap_or(PrincipalId(-1)),
            name,
            is_admin: false,
            principal_ids: ids,
            via_zone: None,
            oidc: None,
        })
    }

    /// Declares bucket `name` over the collection `path`; `public_read` grants the group
    /// [`ANONYMOUS`] `read` on it.
    pub async fn add_bucket(
        self,
        caller: &Caller,
        name: &str,
        path: &LogicalPath,
        public_read: bool,
    ) -> Result<BucketInfo, Error> {
        caller.require_admin("declaring an S3 bucket")?;
        if let Some(why) = bucket_name_error(name) {
            return Err(Error::invalid(why));
        }
        if name.starts_with(HOME_BUCKET_PREFIX) {
            return Err(Error::invalid(format!(
                "bucket names starting {HOME_BUCKET_PREFIX:?} are the users' homes; choose another name"
            )));
        }
        let node = self
            .zone
            .namespace()
            .node_as(caller, path, Permission::Own)
            .await?;
        if node.kind != NodeKind::Collection {
            return Err(Error::new(
                ErrorCode::NotACollection,
                format!("{path} is a data object; a bucket is a collection"),
            ));
        }
        if public_read {
            let group = self.anonymous_group().await?;
            self.zone
                .access()
                .set_acl(caller, path, &group, Permission::Read, false)
                .await?;
        }
        let b = self
            .zone
            .catalog
            .add_s3_bucket(name, node.id, public_read)
            .await?;
        self.zone.auth_cache.invalidate();
        Ok(declared(b))
    }

    /// Declares the configured buckets that are missing, making their collections (owned by
    /// the administrator) where needed. A name already declared keeps its collection.
    pub(crate) async fn ensure_buckets(
        self,
        specs: &[BucketSpec],
        admin: &weft_catalog::Principal,
    ) -> Result<(), Error> {
        if specs.is_empty() {
            return Ok(());
        }
        let caller = self.zone.access().caller_for(admin, &[]).await?;
        for spec in specs {
            let named = |e: Error| Error::new(e.code, format!("[[s3.buckets]] {}: {}", spec.name, e.message));
            match self.zone.catalog.s3_bucket(&spec.name).await? {
                Some(b) if b.path != spec.path => tracing::warn!(
                    bucket = %spec.name, declared = %b.path, configured = %spec.path,
                    "bucket already declared over another collection; `weft s3 bucket rm` it to move it"
                ),
                Some(_) => {}
                None => {
                    self.zone
                        .namespace()
                        .mkdir(&caller, &spec.path, true)
                        .await
                        .map_err(named)?;
                    match self
                        .add_bucket(&caller, &spec.name, &spec.path, spec.public_read)
                        .await
                    {
                        Ok(_) => {}
                        // Another server of the zone starting at the same time.
                        Err(e) if e.code == ErrorCode::AlreadyExists => {}
                        Err(e) => return Err(named(e)),
                    }
                }
            }
        }
        Ok(())
    }

    /// The group [`ANONYMOUS`], made on first use.
    async fn anonymous_group(self) -> Result<PrincipalName, Error> {
        let name = PrincipalName::parse(ANONYMOUS)?;
        match self.zone.catalog.get_principal(&name).await? {
            Some(p) if p.kind == PrincipalKind::Group => Ok(name),
            Some(_) => Err(Error::new(
                ErrorCode::Conflict,
                format!("a user is named {ANONYMOUS:?}; public-read buckets need that name for their group"),
            )),
            None => match self
                .zone
                .catalog
                .create_principal(&name, PrincipalKind::Group, false)
                .await
            {
                Ok(_) => Ok(name),
                Err(e) if e.code == ErrorCode::AlreadyExists => Ok(name),
                Err(e) => Err(e),
            },
        }
    }

    /// Removes a declared bucket (its collection and data stay), and the anonymous read
    /// grant it made.
    pub async fn remove_bucket(self, caller: &Caller, name: &str) -> Result<BucketInfo, Error> {
        caller.require_admin("removing an S3 bucket")?;
        let b = self.zone.catalog.delete_s3_bucket(name).await?;
        self.zone.auth_cache.invalidate();
        if b.public_read {
            let anonymous = PrincipalName::parse(ANONYMOUS)?;
            if let Err(e) = self
                .zone
                .access()
                .set_acl(caller, &b.path, &anonymous, Permission::None, false)
                .await
            {
                tracing::warn!(bucket = name, error = %e, "could not revoke the anonymous read grant");
            }
        }
        Ok(declared(b))
    }

    /// Declared buckets whose collection the caller may read, and the caller's home.
    /// Administrators see every declared bucket.
    pub async fn buckets(self, caller: &Caller) -> Result<Vec<BucketInfo>, Error> {
        let mut out = Vec::new();
        for b in self.zone.catalog.s3_buckets().await? {
            if self
                .zone
                .access()
                .require(caller, &b.path, Permission::Read)
                .await
                .is_ok()
            {
                out.push(declared(b));
            }
        }
        if let Some(home) = self.home_of(&caller.name).await? {
            out.push(home);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    async fn home_of(self, user: &PrincipalName) -> Result<Option<BucketInfo>, Error> {
        let path = LogicalPath::zone_root(&self.zone.name)
            .join("home")?
            .join(user.as_str())?;
        Ok(self.zone.catalog.get_node(&path).await?.map(|n| BucketInfo {
            name: home_bucket(user),
            path,
            public_read: false,
            created: n.created,
            home: true,
        }))
    }

    /// The collection of bucket `name` as `caller` may name it: a declared one, or the
    /// home of the user whose home bucket it is. Unknown: `not_found`. The operation checks
    /// its own permissions; but a home that the caller can reach no part of answers as a
    /// home of nobody does, whatever the operation and the key, so that home buckets do not
    /// tell who has an account (nor, for hashed names, the user's name).
    pub async fn bucket_path(self, caller: &Caller, name: &str) -> Result<LogicalPath, Error> {
        let path = self.cached_bucket_path(name).await?;
        if name.starts_with(HOME_BUCKET_PREFIX) && !self.reaches_into(caller, &path).await? {
            return Err(not_your_home(name));
        }
        Ok(path)
    }

    async fn cached_bucket_path(self, name: &str) -> Result<LogicalPath, Error> {
        let generation = self.zone.auth_cache.generation();
        if let Some((g, at, path)) = self.zone.s3_keys.buckets.lock().expect("not poisoned").get(name) {
            if *g == generation && at.elapsed() < KEY_CACHE_LIFETIME {
                return Ok(path.clone());
            }
        }
        let path = self.find_bucket(name).await?;
        let mut buckets = self.zone.s3_keys.buckets.lock().expect("not poisoned");
        if buckets.len() >= KEY_CACHE_SIZE {
            buckets.clear();
        }
        buckets.insert(name.to_owned(), (generation, Instant::now(), path.clone()));
        Ok(path)
    }

    /// Whether `caller` holds a permission on the collection `path`, or an ACL entry on
    /// something below it (a collection shared out of someone's home).
    async fn reaches_into(self, caller: &Caller, path: &LogicalPath) -> Result<bool, Error> {
        let home = LogicalPath::zone_root(&self.zone.name).join("home")?;
        if caller.is_admin || path.name() == caller.name.as_str() && path.parent() == Some(home) {
            return Ok(true);
        }
        let ids = &caller.principal_ids;
        Ok(
            self.zone.catalog.effective_permission(path, ids).await? >= Permission::Read
                || self.zone.catalog.has_acl_below(path, ids).await?,
        )
    }

    async fn find_bucket(self, name: &str) -> Result<LogicalPath, Error> {
        if let Some(b) = self.zone.catalog.s3_bucket(name).await? {
            return Ok(b.path);
        }
        let Some(rest) = name.strip_prefix(HOME_BUCKET_PREFIX) else {
            return Err(Error::not_found(format!("bucket {name}")));
        };
        // A home bucket that is nobody's is refused as another's is, so that bucket names
        // do not tell who has an account.
        let nobodys = || not_your_home(name);
        // `home-<user>` names its user; a hashed name (`home--` and 16 hex digits) needs
        // the users searched.
        let Some(hex) = rest.strip_prefix(HASHED_HOME_MARK) else {
            let user = PrincipalName::parse(rest).ok().filter(|u| home_bucket(u) == name);
            return match user {
                Some(u) => Ok(self.home_of(&u).await?.ok_or_else(nobodys)?.path),
                None => Err(nobodys()),
            };
        };
        let hashed = hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hashed {
            return Err(nobodys());
        }
        let user = self
            .zone
            .catalog
            .list_principals(PrincipalKind::User)
            .await?
            .into_iter()
            .map(|p| p.name)
            .find(|u| home_bucket(u) == name);
        match user {
            Some(u) => Ok(self.home_of(&u).await?.ok_or_else(nobodys)?.path),
            None => Err(nobodys()),
        }
    }

    /// Checks that the caller may read the collection `path` (HeadBucket).
    pub async fn head_bucket(self, caller: &Caller, path: &LogicalPath) -> Result<(), Error> {
        self.zone
            .namespace()
            .node_as(caller, path, Permission::Read)
            .await
            .map(|_| ())
    }

    /// A page of the data objects and folders (as the key `dir/`) below
    /// `bucket` whose key (path relative to it) starts with `prefix` and sorts after `after`; with a `delimiter`, keys holding it past the
    /// prefix are rolled up into common prefixes. The caller must read the collection the
    /// prefix is in (and so everything below it), not necessarily the bucket's.
    pub async fn list(
        self,
        caller: &Caller,
        bucket: &LogicalPath,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max: usize,
    ) -> Result<S3Page, Error> {
        let dir = match prefix.rfind('/') {
            Some(i) => {
                LogicalPath::parse(&format!("{bucket}/{}", &prefix[..i])).unwrap_or_else(|_| bucket.clone())
            }
            None => bucket.clone(),
        };
        // Read on the prefix's collection covers everything below it; a user granted a
        // collection inside someone's bucket lists it with that prefix.
        self.zone.access().require(caller, &dir, Permission::Read).await?;
        let base = format!("{bucket}/");
        let lo = format!("{base}{prefix}");
        let hi = successor(&lo).ok_or_else(|| Error::invalid("a prefix of nothing but U+10FFFF"))?;
        if max == 0 {
            return Ok(S3Page::default());
        }
        // A folder (made as the key `dir/`, as consoles and Cyberduck do, and read by rclone
        // and s3fs as a directory) is listed as that key. The catalog returns it at its
        // path `dir`, before the keys that extend it with a byte below '/' (`dir.txt`);
        // its key sorts after those, so it waits in `folders` until the listing passes it.
        // One that the page before ended in front of waits from the start.
        let mut list = Listing {
            prefix,
            delimiter: delimiter.filter(|d| !d.is_empty()),
            after,
            max,
            count: 0,
            folders: BTreeMap::new(),
            page: S3Page::default(),
        };
        // `after` is the client's, of any length: a folder's key `dir/` is a key, so `dir` is
        // shorter than one, which bounds the lookup whatever `after` is.
        if let Some(a) = after.filter(|a| a.as_bytes() >= prefix.as_bytes()) {
            let around: Vec<String> = a
                .char_indices()
                .take_while(|&(i, _)| i < S3_KEY_MAX)
                .filter(|&(i, c)| i > 0 && c < '/')
                .map(|(i, _)| format!("{base}{}", &a[..i]))
                .collect();
            for f in self.zone.catalog.s3_folders(&around).await? {
                list.wait(f.path[base.len()..].to_owned(), f);
            }
        }
        // `from` is where the next query starts (inclusive), `after_path` the last path seen.
        let mut from = lo.clone();
        let mut after_path = match after {
            Some(a) if a.as_bytes() >= prefix.as_bytes() => format!("{base}{a}"),
            _ => String::new(),
        };
        'pages: loop {
            // With a delimiter, a common prefix ends the query (the next one seeks past
            // it): fetch a few rows at a time rather than a page that is thrown away.
            let cap = if list.delimiter.is_some() {
                ROLLED_FETCH
            } else {
                S3_LIST_MAX + 1
            };
            let want = (max + 1 - list.count).min(cap) as u32;
            let rows = self.zone.catalog.s3_list(&from, &hi, &after_path, want).await?;
            let ended = rows.len() < want as usize;
            for row in rows {
                let key = row.path[base.len()..].to_owned();
                after_path = row.path.clone();
                if row.folder {
                    list.wait(key, row);
                    continue;
                }
                let step = match list.folders_before(&key) {
                    Some(step) => step,
                    None => list.push(key, row),
                };
                match step {
                    Step::Next => {}
                    Step::Done => break 'pages,
                    Step::Past(cp) => {
                        // Everything below a common prefix is one entry: the next query
                        // starts at the first path past all of them.
                        match successor(&format!("{base}{cp}")) {
                            Some(next) => from = next,
                            None => break 'pages,
                        }
                        after_path.clear();
                        continue 'pages;
                    }
                }
            }
            if ended {
                while let Some((key, row)) = list.folders.pop_first() {
                    if let Step::Done = list.push(key, row) {
                        break;
                    }
                }
                break;
            }
        }
        Ok(list.page)
    }

    /// Makes the folder `path` (a PUT of the key `dir/`): its collection, with any missing
    /// parents, marked so that listings show the key `dir/` as S3 shows a folder's, empty or
    /// not. Collections made otherwise (by a put below them, by `weft mkdir`) are common
    /// prefixes only while something is in them, as on S3.
    pub async fn make_folder(self, caller: &Caller, path: &LogicalPath) -> Result<(), Error> {
        let node = self.zone.namespace().mkdir(caller, path, true).await?;
        self.zone
            .access()
            .require(caller, path, Permission::Write)
            .await?;
        self.zone.catalog.set_s3_folder(node.id, true).await
    }

    /// Removes the folder `path` (a DELETE of the key `dir/`): its collection if empty, else
    /// only its mark, as deleting a folder's key on S3 leaves the keys below it.
    pub async fn remove_folder(self, caller: &Caller, path: &LogicalPath) -> Result<(), Error> {
        let node = self
            .zone
            .namespace()
            .node_as(caller, path, Permission::Read)
            .await?;
        if node.kind != NodeKind::Collection {
            return Ok(()); // no key `path/`: deleted already
        }
        match self.zone.namespace().remove(caller, path, false).await {
            Err(e) if e.code == ErrorCode::CollectionNotEmpty => {
                self.zone
                    .access()
                    .require(caller, path, Permission::Write)
                    .await?;
                self.zone.catalog.set_s3_folder(node.id, false).await
            }
            done => done,
        }
    }

    /// The data object at `path` with its ETag, content type, metadata and parts (read
    /// needed).
    pub async fn object(self, caller: &Caller, path: &LogicalPath) -> Result<S3Object, Error> {
        self.zone.local(path)?;
        self.zone.access().require(caller, path, Permission::Read).await?;
        let (node, attrs, meta) = match self.zone.catalog.s3_object_at(path).await? {
            Some((node, attrs, meta)) if node.kind == NodeKind::Object => (node, attrs, meta),
            _ => return Err(Error::not_found(path)),
        };
        let etag = etag(attrs.as_ref(), node.checksum.as_ref());
        let (content_type, parts) = match attrs {
            // The attributes hold for the current content only, whose size the parts add up to.
            Some(a) if !a.parts.is_empty() && a.parts.iter().sum::<u64>() == node.size as u64 => {
                (a.content_type, a.parts)
            }
            a => (a.and_then(|a| a.content_type), vec![node.size as u64]),
        };
        Ok(S3Object {
            etag,
            content_type,
            node,
            meta,
            parts,
        })
    }
}

/// What a listing does after an entry.
enum Step {
    Next,
    /// A common prefix was shown: go on past everything below it.
    Past(String),
    /// The page is full.
    Done,
}

/// One ListObjects page being filled, in key order.
struct Listing<'a> {
    prefix: &'a str,
    delimiter: Option<&'a str>,
    after: Option<&'a str>,
    max: usize,
    count: usize,
    /// Folders (`dir/`) met at their path, waiting for their place in key order.
    folders: BTreeMap<String, S3Listed>,
    page: S3Page,
}

impl Listing<'_> {
    /// Holds the folder at `key` (without its slash) until the listing passes `key/`; one
    /// outside the prefix, or shown on a page before, is no entry.
    fn wait(&mut self, key: String, row: S3Listed) {
        let key = format!("{key}/");
        if key.starts_with(self.prefix) && self.after.is_none_or(|a| key.as_str() > a) {
            self.folders.insert(key, row);
        }
    }

    /// Shows the waiting folders that sort before `key`; what stopped them, if anything.
    fn folders_before(&mut self, key: &str) -> Option<Step> {
        while self
            .folders
            .first_key_value()
            .is_some_and(|(f, _)| f.as_str() < key)
        {
            let (f, row) = self.folders.pop_first().expect("looked at");
            match self.push(f, row) {
                Step::Next => {}
                stop => return Some(stop),
            }
        }
        None
    }

    /// Shows `key`, or the common prefix it rolls up into.
    fn push(&mut self, key: String, row: S3Listed) -> Step {
        let rolled = self.delimiter.and_then(|d| {
            let rest = &key[self.prefix.len()..];
            rest.find(d)
                .map(|i| format!("{}{}", self.prefix, &rest[..i + d.len()]))
        });
        if let Some(cp) = rolled {
            self.folders.retain(|f, _| !f.starts_with(&cp));
            if self.after.is_some_and(|a| a.starts_with(&cp)) {
                return Step::Past(cp); // shown on the page before
            }
            if self.count == self.max {
                self.page.truncated = true;
                return Step::Done;
            }
            self.count += 1;
            self.page.last = Some(cp.clone());
            self.page.prefixes.push(cp.clone());
            return Step::Past(cp);
        }
        if self.count == self.max {
            self.page.truncated = true;
            return Step::Done;
        }
        self.count += 1;
        self.page.last = Some(key.clone());
        self.page.objects.push((key, row));
        Step::Next
    }
}

/// The ETag of an object with `checksum`: the one registered with its content, else its
/// BLAKE3 in hex (64 digits, so that no client takes it for an MD5).
pub fn etag(attrs: Option<&S3Attrs>, checksum: Option<&Checksum>) -> String {
    match (attrs, checksum) {
        (Some(a), _) => a.etag.clone(),
        (None, Some(sum)) => sum.hex.clone(),
        (None, None) => String::new(),
    }
}

/// Checks `x-amz-meta-*` pairs as the AVUs they become. DataCite fields are checked
/// together, with `weft meta`, not one header at a time.
pub fn check_meta(meta: &[(String, String)]) -> Result<(), Error> {
    for (attr, value) in meta {
        weft_types::meta::validate_avu_part("attribute", attr)?;
        weft_types::meta::validate_avu_part("value", value)?;
        if attr.starts_with(crate::namespace::datacite::PREFIX) {
            return Err(Error::invalid(format!(
                "x-amz-meta-{attr}: DataCite fields are set with `weft meta`, where they are checked together"
            )));
        }
    }
    Ok(())
}

fn declared(b: S3Bucket) -> BucketInfo {
    BucketInfo {
        name: b.name,
        path: b.path,
        public_read: b.public_read,
        created: b.created,
        home: false,
    }
}

#[cfg(test)]
mod tests {
    use super::{home_bucket, successor};
    use weft_types::PrincipalName;

    #[test]
    fn no_plain_home_bucket_spells_a_hashed_one() {
        let jane = PrincipalName::parse("jane_doe").unwrap();
        let hashed = home_bucket(&jane);
        let hex = hashed.strip_prefix("home--").expect("hashed form");
        assert_eq!(hex.len(), 16, "{hashed}");
        // The user named after the hash gets a bucket of the plain form, not jane_doe's.
        let mimic = PrincipalName::parse(hex).or_else(|_| PrincipalName::parse(&format!("a{}", &hex[1..])));
        assert_ne!(home_bucket(&mimic.unwrap()), hashed);
        assert!(
            PrincipalName::parse(&format!("-{hex}")).is_err(),
            "a user name may not start with '-'"
        );
        assert_eq!(home_bucket(&PrincipalName::parse("alice").unwrap()), "home-alice");
    }

    #[test]
    fn successor_is_past_every_extension() {
        assert_eq!(successor("/z/b/p/").as_deref(), Some("/z/b/p0"));
        assert_eq!(successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(successor("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(successor("\u{10FFFF}"), None);
        let s = successor("p/").unwrap();
        for k in ["p/", "p/\u{10FFFF}x", "p/\u{10FFFF}\u{10FFFF}"] {
            assert!(k < s.as_str(), "{k:?}");
        }
    }
}

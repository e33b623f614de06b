//! `weft user`, `weft group`, `weft acl`.

use super::output::{print_json, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::{AclRequest, PrincipalWire};

#[derive(Debug, Args)]
pub struct UserArgs {
    #[command(subcommand)]
    cmd: UserCmd,
}

#[derive(Debug, Subcommand)]
enum UserCmd {
    /// Create a user (with a home collection).
    Add {
        /// Make the user an administrator of the zone.
        #[arg(long)]
        admin: bool,
        name: String,
    },
    /// List users.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a user.
    Rm { name: String },
}

#[derive(Debug, Args)]
pub struct GroupArgs {
    #[command(subcommand)]
    cmd: GroupCmd,
}

#[derive(Debug, Subcommand)]
enum GroupCmd {
    /// Create a group.
    Add { name: String },
    /// Remove a group.
    Rm { name: String },
    /// List groups.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Members of a group.
    Member {
        #[command(subcommand)]
        cmd: MemberCmd,
    },
}

#[derive(Debug, Subcommand)]
enum MemberCmd {
    /// Add a user to a group.
    Add { group: String, user: String },
    /// Remove a user from a group.
    Rm { group: String, user: String },
    /// List the members of a group.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        group: String,
    },
}

#[derive(Debug, Args)]
pub struct AclArgs {
    #[command(subcommand)]
    cmd: AclCmd,
}

#[derive(Debug, Subcommand)]
enum AclCmd {
    /// Show who may do what on a path (entries inherited from collections included).
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        path: String,
    },
    /// Grant a user or group read, write or own; `none` removes the entry.
    Set {
        /// Apply to everything below a collection as well.
        #[arg(short, long)]
        recursive: bool,
        path: String,
        principal: String,
        #[arg(value_parser = ["read", "write", "own", "none"])]
        permission: String,
    },
}

pub async fn user(ctx: &Ctx, a: UserArgs) -> Result {
    let c = &ctx.client;
    match a.cmd {
        UserCmd::Add { admin, name } => drop(c.add_user(&name, admin).await?),
        UserCmd::Rm { name } => c.remove_user(&name).await?,
        UserCmd::Ls { json } => print_principals(&c.users().await?, json)?,
    }
    Ok(())
}

pub async fn group(ctx: &Ctx, a: GroupArgs) -> Result {
    let c = &ctx.client;
    match a.cmd {
        GroupCmd::Add { name } => drop(c.add_group(&name).await?),
        GroupCmd::Rm { name } => c.remove_group(&name).await?,
        GroupCmd::Ls { json } => print_principals(&c.groups().await?, json)?,
        GroupCmd::Member { cmd } => match cmd {
            MemberCmd::Add { group, user } => c.add_member(&group, &user).await?,
            MemberCmd::Rm { group, user } => c.remove_member(&group, &user).await?,
            MemberCmd::Ls { json, group } => print_principals(&c.members(&group).await?, json)?,
        },
    }
    Ok(())
}

fn print_principals(list: &[PrincipalWire], json: bool) -> Result {
    if json {
        return print_json(list);
    }
    for p in list {
        if p.admin {
            println!("{} (admin)", p.name);
        } else {
            println!("{}", p.name);
        }
    }
    Ok(())
}

pub async fn acl(ctx: &Ctx, a: AclArgs) -> Result {
    match a.cmd {
        AclCmd::Ls { json, path } => {
            let entries = ctx.client.acl(&ctx.resolve(&path).await?).await?;
            if json {
                return print_json(&entries);
            }
            let w = entries
                .iter()
                .map(|e| e.principal.len() + e.kind.len() + 3)
                .max()
                .unwrap_or(0);
            for e in &entries {
                println!("{:w$}  {}", format!("{} ({})", e.principal, e.kind), e.permission);
            }
            Ok(())
        }
        AclCmd::Set {
            recursive,
            path,
            principal,
            permission,
        } => {
            let req = AclRequest {
                principal,
                permission,
                recursive,
            };
            ctx.client.set_acl(&ctx.resolve(&path).await?, &req).await?;
            Ok(())
        }
    }
}

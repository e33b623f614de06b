//! `weft key rotate`: puts a new key first in a zone's key file (`<data-dir>/secret.key`,
//! see weft-zone `keys.rs`). Run beside the zone, as its service account; the zone seals
//! every secret with the new key at its next start, after which older keys may be removed.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KeyCommand {
    /// Add a new key that seals the zone's secrets from its next start on (the older keys
    /// still open what they sealed).
    Rotate {
        /// The zone's data directory [default: ~/.local/share/weft].
        #[arg(long, env = "WEFT_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub fn run(args: KeyArgs) -> anyhow::Result<()> {
    match args.command {
        KeyCommand::Rotate { data_dir } => {
            let data_dir = crate::serve::data_dir(data_dir)?;
            let id = weft_zone::keys::rotate(&data_dir).map_err(|e| anyhow::anyhow!("{e}"))?;
            println!(
                "added key {id} to {}; restart the zone to seal its secrets with it, then back the file up",
                weft_zone::keys::key_file(&data_dir).display()
            );
            Ok(())
        }
    }
}

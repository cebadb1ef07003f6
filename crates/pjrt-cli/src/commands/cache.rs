//! `pjrt cache info|clear`: the compile cache `pjrt run` uses (`$PJRT_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/pjrt-client/compile` or `~/.cache/pjrt-client/compile`).

use crate::error::Error;
use crate::out::outln;
use serde_json::json;

use crate::cli::CacheCommand;
use crate::compiling::open_cache;

/// Runs a `pjrt cache` subcommand.
pub fn exec(command: &CacheCommand) -> Result<(), Error> {
    let cache = open_cache()?;
    match command {
        CacheCommand::Info { json } => {
            let info = cache.info()?;
            if *json {
                outln!(
                    "{}",
                    json!({ "dir": info.dir, "entries": info.entries, "bytes": info.bytes, "max_bytes": info.max_bytes })
                )?;
            } else {
                outln!("compile cache: {}", info.dir.display())?;
                outln!("entries:       {}", info.entries)?;
                outln!("size:          {} of at most {}", human(info.bytes), human(info.max_bytes))?;
            }
        }
        CacheCommand::Clear { json } => {
            let removed = cache.clear()?;
            if *json {
                outln!("{}", json!({ "dir": cache.dir(), "removed": removed }))?;
            } else {
                outln!("removed {removed} entries from {}", cache.dir().display())?;
            }
        }
    }
    Ok(())
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

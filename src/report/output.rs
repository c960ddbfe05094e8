//! Writing every output of a report into a directory.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::InflationReport;

/// `e` with the path it concerns in its message.
pub(crate) fn at(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Creates `path` and runs `write` on it, buffered.
pub(crate) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut io::BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let file = File::create(path).map_err(|e| at(path, "creating", e))?;
    let mut w = io::BufWriter::new(file);
    write(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| at(path, "writing", e))
}

impl InflationReport {
    /// Writes `report.txt` (the text report), `report.csv`, `report.svg`
    /// and, with the `report` feature, `report.json` (with the timelines)
    /// and `trace.json` (Chrome trace events) into `dir` (created if
    /// missing); returns their paths. The JSON and the trace are streamed.
    ///
    /// # Errors
    /// The I/O error, with the path it concerns in its message.
    pub fn write_all(&self, dir: impl AsRef<Path>) -> io::Result<Vec<PathBuf>> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| at(dir, "creating", e))?;
        let mut out = Vec::new();
        let mut file = |name: &str, f: &dyn Fn(&mut io::BufWriter<File>) -> io::Result<()>| {
            let path = dir.join(name);
            write_file(&path, f)?;
            out.push(path);
            Ok::<(), io::Error>(())
        };
        file("report.txt", &|w| write!(w, "{self}"))?;
        file("report.csv", &|w| w.write_all(self.to_csv().as_bytes()))?;
        file("report.svg", &|w| w.write_all(self.to_svg().as_bytes()))?;
        #[cfg(feature = "report")]
        {
            file("report.json", &|w| self.write_json(w))?;
            file("trace.json", &|w| self.write_chrome_trace(w))?;
        }
        Ok(out)
    }
}

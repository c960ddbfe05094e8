//! The report as JSON (the `report` feature): every field, the timelines
//! of both runs included, readable back into an [`InflationReport`].

use std::io;

use super::run::Run;
use super::InflationReport;

impl InflationReport {
    /// The report as indented JSON (every field, with the timelines).
    ///
    /// ```
    /// use terroir::report::{InflationReport, RecordOptions};
    /// use terroir::ThreadPoolBuilder;
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let work = || terroir::join(|| terroir::label("a", || 1), || terroir::label("b", || 2));
    /// let ts = RecordOptions::timestamps_only();
    /// let base = InflationReport::baseline_pool(&pool).unwrap().record_with(&ts, work).1;
    /// let report = InflationReport::new(&base, &pool.record_with(&ts, work).1);
    /// let back = InflationReport::from_json(&report.to_json()).unwrap();
    /// assert_eq!(back.labels, report.labels);
    /// assert_eq!(back.parallel_run, report.parallel_run);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serialises")
    }

    /// Writes the report as compact JSON to `w` (streamed: no copy of it
    /// is held in memory).
    ///
    /// # Errors
    /// The writer's error.
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn write_json(&self, w: impl io::Write) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        serde_json::to_writer(&mut w, self).map_err(io::Error::from)?;
        io::Write::flush(&mut w)
    }

    /// A report from its JSON ([`to_json`](Self::to_json),
    /// [`write_json`](Self::write_json)).
    ///
    /// # Errors
    /// When `text` is not such JSON; the error says where.
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn from_json(text: &str) -> Result<InflationReport, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// A report from JSON read from `r`.
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json), or the reader's error.
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn read_json(r: impl io::Read) -> Result<InflationReport, serde_json::Error> {
        serde_json::from_reader(io::BufReader::new(r))
    }
}

impl Run {
    /// Writes the run as compact JSON to `w`.
    ///
    /// # Errors
    /// The writer's error.
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn write_json(&self, w: impl io::Write) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        serde_json::to_writer(&mut w, self).map_err(io::Error::from)?;
        io::Write::flush(&mut w)
    }

    /// A run from JSON read from `r`.
    ///
    /// # Errors
    /// When it is not such JSON, or the reader's error.
    #[cfg_attr(docsrs, doc(cfg(feature = "report")))]
    pub fn read_json(r: impl io::Read) -> Result<Run, serde_json::Error> {
        serde_json::from_reader(io::BufReader::new(r))
    }
}

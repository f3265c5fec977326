//! Both Workers' one way to write Analytics Engine data points (feature `workers`), laid out as
//! `observe::analytics_points` says.

use serde::Serialize;
use worker::wasm_bindgen::JsCast;
use worker::worker_sys::AnalyticsEngineDataset as AnalyticsEngineDatasetSys;
use worker::{console_error, AnalyticsEngineDataset};

use crate::observe::analytics_points::Point;
use crate::util::js_json::to_js_array;

/// A point as `writeDataPoint` takes it.
#[derive(Serialize)]
struct DataPoint<'a> {
    indexes: [&'a str; 1],
    blobs: &'a [&'a str],
    doubles: &'a [f64],
}

/// Writes `points`; a failed write is logged, never the caller's concern. The points cross into
/// JS as one JSON text (a batch's hundred points, not a call per field of each).
pub fn write_points_to(dataset: &AnalyticsEngineDataset, points: &[Point<'_>]) {
    if let Err(e) = write_all(dataset, points) {
        console_error!("analytics engine write failed: {e}");
    }
}

fn write_all(dataset: &AnalyticsEngineDataset, points: &[Point<'_>]) -> worker::Result<()> {
    let points: Vec<DataPoint> = points
        .iter()
        .map(|p| DataPoint {
            indexes: [p.index],
            blobs: &p.blobs,
            doubles: &p.doubles,
        })
        .collect();
    let dataset: &AnalyticsEngineDatasetSys = dataset.as_ref().unchecked_ref();
    for point in to_js_array(&points)?.iter() {
        dataset.write_data_point(point)?;
    }
    Ok(())
}

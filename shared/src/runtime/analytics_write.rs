//! Both Workers' one way to write Analytics Engine data points (feature `workers`), laid out as
//! `observe::analytics_points` says.

use serde::Serialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;
use worker::{console_error, AnalyticsEngineDataset};

use crate::observe::analytics_points::Point;

#[wasm_bindgen(module = "/src/runtime/analytics_write.js")]
extern "C" {
    /// Writes each point of `points_json` (a JSON array of [`DataPoint`]s) to `dataset`.
    #[wasm_bindgen(js_name = writePoints, catch)]
    fn write_points(dataset: &JsValue, points_json: &str) -> Result<(), JsValue>;
}

/// A point as `writeDataPoint` takes it.
#[derive(Serialize)]
struct DataPoint<'a> {
    indexes: [&'a str; 1],
    blobs: &'a [&'a str],
    doubles: &'a [f64],
}

/// Writes `points`; a failed write is logged, never the caller's concern. The points cross into
/// JS as one JSON text (a batch's hundred points in one call).
pub fn write_points_to(dataset: &AnalyticsEngineDataset, points: &[Point<'_>]) {
    let points: Vec<DataPoint> = points
        .iter()
        .map(|p| DataPoint {
            indexes: [p.index],
            blobs: &p.blobs,
            doubles: &p.doubles,
        })
        .collect();
    let written = serde_json::to_string(&points)
        .map_err(|e| e.to_string())
        .and_then(|json| write_points(dataset.as_ref(), &json).map_err(|e| format!("{e:?}")));
    if let Err(e) = written {
        console_error!("analytics engine write failed: {e}");
    }
}

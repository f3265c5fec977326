//! Both Workers' one way to write an Analytics Engine data point (feature `workers`), laid out as
//! `observe::analytics_points` says.

use worker::{console_error, AnalyticsEngineDataPointBuilder, AnalyticsEngineDataset};

use crate::observe::analytics_points::Point;

/// Writes `point`; a failed write is logged, never the caller's concern.
pub fn write_point_to(dataset: &AnalyticsEngineDataset, point: &Point<'_>) {
    let builder = AnalyticsEngineDataPointBuilder::new().indexes([point.index]);
    let builder = point
        .blobs
        .iter()
        .fold(builder, |b, blob| b.add_blob(*blob));
    let builder = point.doubles.iter().fold(builder, |b, d| b.add_double(*d));
    if let Err(e) = builder.write_to(dataset) {
        console_error!("analytics engine write failed: {e}");
    }
}

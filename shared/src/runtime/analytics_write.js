// A batch's Analytics Engine data points written in ONE call from the WASM
// (shared/src/util/analytics_write.rs): their JSON text read here, each point handed to
// `writeDataPoint`, not a call across the boundary per point and per field.
export function writePoints(dataset, pointsJson) {
  for (const point of JSON.parse(pointsJson)) dataset.writeDataPoint(point);
}

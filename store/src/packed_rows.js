// A statement's rows read in ONE call from the WASM (store/src/d1.rs `packed_results`): each
// row's one column `j` is a JSON text its statement built (`json_array(...) AS j`), and they
// are joined into one JSON array, so no value is encoded again on its way into Rust.
export function packedRows(results) {
  return `[${(results ?? []).map((row) => row.j).join(",")}]`;
}

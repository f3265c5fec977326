// A statement's rows read in ONE call from the WASM (store/src/d1.rs `packed_results`): each
// row's one column `j` is a JSON text its statement built (`json_array(...) AS j`, store/src/checked.rs `packed!`), and they
// are joined into one JSON array, so no value is encoded again on its way into Rust. It
// crosses as UTF-8 bytes: a string returned to the WASM is copied in a character at a time,
// about ten times slower than the encoder at a claim's 14 KB (docs/performance.md "Benchmark").
const encoder = new TextEncoder();

export function packedRows(results) {
  return encoder.encode(`[${(results ?? []).map((row) => row.j).join(",")}]`);
}

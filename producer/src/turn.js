// A request's wait in enqueue's line (producer/src/enqueue_group.rs): a promise and the function
// that resolves it, which a timer also calls after `ms` (the runtime cancels, as hung, a request
// that waits only on another's work). One call from the WASM for both.
export function waitTurn(ms) {
  let wake;
  const turn = new Promise((resolve) => {
    wake = resolve;
  });
  const timer = setTimeout(wake, ms);
  turn.then(() => clearTimeout(timer));
  return [turn, wake];
}

// How long dawn.node may spin while it waits for the GPU. Import this before dawn.node's first
// asynchronous call (worker.mjs and the ORT runner do, right after loading the package).
//
// dawn.node settles its promises (onSubmittedWorkDone, mapAsync, popErrorScope, asynchronous
// pipeline creation) by polling Dawn from a `setImmediate` callback that queues itself again for as
// long as any promise is pending. A long wait therefore keeps one core busy doing nothing: on
// lavapipe, where the "GPU" is the CPU's other threads, that spin takes a core from the dispatch it
// waits for, from the compile of a pipeline's first dispatch, and from the other worker processes
// of a gate on a small machine (a cold compile of TVM's prefill kernel spent half its CPU time in
// the spin).
//
// So a polling chain spins for SPIN_MS, then polls once a millisecond: a short wait costs nothing
// more, a long one ends at most a millisecond later than it would have. A chain is recognised by
// its callbacks queueing the next one; a `setImmediate` from anywhere else starts a new chain, and
// everything other than dawn.node's polling keeps its first SPIN_MS untouched.

const SPIN_MS = 2;
const POLL_MS = 1;

const immediate = globalThis.setImmediate;
let chainStart = 0;
let inCallback = false;

globalThis.setImmediate = function setImmediate(callback, ...args) {
  const now = performance.now();
  if (!inCallback) {
    chainStart = now; // queued from outside a chain's callback: a new wait begins
  }
  const run = () => {
    inCallback = true;
    try {
      callback(...args);
    } finally {
      inCallback = false;
    }
  };
  return now - chainStart < SPIN_MS ? immediate(run) : setTimeout(run, POLL_MS);
};

// Answers each line of stdin with the time it reads: the time of day in milliseconds since the
// epoch, and the monotonic nanoseconds since its first line.
let first = null;
require("readline").createInterface({ input: process.stdin }).on("line", () => {
  const now = Date.now(), monotonic = process.hrtime.bigint();
  if (first === null) first = monotonic;
  console.log(`${now} ${monotonic - first}`);
});

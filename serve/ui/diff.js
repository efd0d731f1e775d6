// diff.js: a line diff for showing edits.

const maxCells = 4_000_000; // LCS table bound; larger edits show as replace-all

/**
 * diffLines returns [op, line] pairs turning a into b: op is " " (kept),
 * "-" (removed) or "+" (added). Common leading and trailing lines are
 * trimmed before the LCS so typical edits stay cheap.
 * @param {string} a
 * @param {string} b
 * @returns {Array<[string,string]>}
 */
export function diffLines(a, b) {
  // A final newline ends the last line; it is not a line of its own.
  const x = a === "" ? [] : a.replace(/\n$/, "").split("\n");
  const y = b === "" ? [] : b.replace(/\n$/, "").split("\n");
  let pre = 0;
  while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
  let suf = 0;
  while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf++;
  const out = [];
  for (let i = 0; i < pre; i++) out.push([" ", x[i]]);
  const xs = x.slice(pre, x.length - suf);
  const ys = y.slice(pre, y.length - suf);
  const n = xs.length;
  const m = ys.length;
  if (n * m > maxCells) {
    for (const l of xs) out.push(["-", l]);
    for (const l of ys) out.push(["+", l]);
  } else {
    // lcs[i][j]: length of the LCS of xs[i:] and ys[j:].
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lcs[i * w + j] = xs[i] === ys[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xs[i] === ys[j]) {
        out.push([" ", xs[i]]);
        i++;
        j++;
      } else if (i < n && (j === m || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
        out.push(["-", xs[i++]]);
      } else {
        out.push(["+", ys[j++]]);
      }
    }
  }
  for (let i = x.length - suf; i < x.length; i++) out.push([" ", x[i]]);
  return out;
}

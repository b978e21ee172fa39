/**
 * On-device ranking of the released counts: the person's own films are excluded, the rest are
 * ordered by count, higher first; equal counts by the smaller item id (dprec.selection's rule,
 * as the Python SDK's DeviceClient.recommend).
 */
export function rankFilms(counts: ArrayLike<number>, own: ReadonlySet<number>, n: number): number[] {
  const ids: number[] = [];
  for (let i = 0; i < counts.length; i++) if (!own.has(i)) ids.push(i);
  ids.sort((a, b) => (counts[b]! - counts[a]!) || (a - b));
  return ids.slice(0, Math.max(0, n));
}

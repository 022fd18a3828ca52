/**
 * Where a V8 CPU profile (`.cpuprofile`, from `--cpu-prof` or the inspector's Profiler) spent its
 * samples: self time by package (the AWS SDK is `@aws-sdk/*` + `@smithy/*`) and the top functions.
 */
type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
export type CpuProfile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

/** The package (or area) a script URL belongs to. */
export const areaOf = (url: string): string => {
  if (!url) return '(native / idle / gc)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    const pkg = rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    if (pkg.startsWith('@aws-sdk/') || pkg.startsWith('@smithy/')) return `AWS SDK (${pkg})`;
    return pkg;
  }
  if (url.startsWith('node:')) return 'node internals';
  const m = url.match(/\/(lib|functions|infra|bench|test)\/(.*)$/);
  return m ? `${m[1]}/${m[2].split('/')[0]}` : url;
};

export type ProfileSummary = {
  total_ms: number;
  /** Share of non-idle samples, in %, by area (SDK packages summed under "AWS SDK"). */
  by_area: Record<string, number>;
  sdk_share: number;
  top_functions: { fn: string; area: string; ms: number; share: number }[];
};

export const summarise = (profile: CpuProfile, topN = 15): ProfileSummary => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const areas = new Map<string, number>();
  const fns = new Map<string, { area: string; us: number }>();
  let busy = 0;
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    const name = node.callFrame.functionName;
    if (name === '(idle)' || name === '(program)') continue;
    busy += us;
    const area = areaOf(node.callFrame.url);
    areas.set(area, (areas.get(area) ?? 0) + us);
    const key = `${name || '(anonymous)'} ${node.callFrame.url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`;
    const f = fns.get(key) ?? { area, us: 0 };
    f.us += us;
    fns.set(key, f);
  }
  const pct = (us: number) => Number(((100 * us) / (busy || 1)).toFixed(1));
  const byArea: Record<string, number> = {};
  let sdk = 0;
  for (const [area, us] of [...areas].sort((a, b) => b[1] - a[1])) {
    if (area.startsWith('AWS SDK')) sdk += us;
    byArea[area] = pct(us);
  }
  return {
    total_ms: Math.round(busy / 1000),
    by_area: byArea,
    sdk_share: pct(sdk),
    top_functions: [...fns]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, topN)
      .map(([fn, f]) => ({ fn, area: f.area, ms: Math.round(f.us / 1000), share: pct(f.us) })),
  };
};

// Validation shared by the two stages whose parameters may be per channel (quantizeDownInt32ToUint8Scale,
// scaleInt32ByFixedPointAndExponent): either every named parameter is a scalar, or any vector among
// them fixes the axis and each one is a scalar or a vector of that axis's length.

import type { Axis, PerChannel } from '../../types.ts';
import { checkAxis, checkInt32, checkPerChannel } from '../check.ts';
import type { StageShape } from './stage.ts';

export function checkChannels(f: string, axis: Axis | undefined, params: [string, PerChannel][], shape: StageShape): void {
  const perChannel = params.some(([, v]) => v instanceof Int32Array);
  const checked = perChannel ? checkAxis(`${f}.axis`, axis) : undefined;
  for (const [name, v] of params) {
    if (checked) checkPerChannel(`${f}.${name}`, v, shape.length(checked), shape.what(checked));
    else checkInt32(`${f}.${name}`, v);
  }
}

// A Node module hook for running a function bundle off Lambda: the bundle imports the layer's
// absolute path (/opt/nodejs/observability.mjs), which this sends to a layer built elsewhere.
// Registered by `layerNodeArgs` (infra/bundles/build.ts); every other import resolves as usual.
let layer;

export const initialize = (data) => {
  layer = data;
};

export const resolve = (specifier, context, nextResolve) =>
  specifier === layer.import ? { url: layer.url, shortCircuit: true } : nextResolve(specifier, context);

// The package's types for TypeScript 5, whose dom library has no WebGPU: @webgpu/types declares it. Newer
// TypeScript declares WebGPU in dom itself, where @webgpu/types would clash with it (package.json's exports
// route by version).
/// <reference types="@webgpu/types" />
export * from '../types/index.js';

// sgmat-enable.wgsl: the directives of the subgroup-matrix kernel (./sgmat.wgsl). WGSL wants them before
// every declaration, so this file is composed first, in front of the shared libraries.
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);

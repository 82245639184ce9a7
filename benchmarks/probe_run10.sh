cli="python3 -m webgpu_torch.cli"
q() { grep -v -i -E "warn|W12"; }
$cli bench gemm --sizes 1024x1024x1024 2048x2048x2048 4096x4096x4096 --variants vec4_128x128 vec4_128x128_db vec4_128x128_k16 vec4_128x128_k16_db vec4_64x64 vec4_64x64_db 2>&1 | q | tee $OUT/db_dawn.txt
$cli bench gemm --linear --sizes 593x768x3072 593x3072x768 128x3072x768 --variants vec4_128x128 vec4_128x128_db vec4_64x64 vec4_64x64_db 2>&1 | q | tee $OUT/db_linear.txt
L="1x768x768 1x3072x768 1x768x3072 8x3072x768 128x3072x768 593x768x3072 593x3072x768 1x51289x768 4096x4096x4096"
for w in float32 float16; do WEBGPU_TORCH_ENGINE=wgpu timeout 120 $cli bench gemm --linear --variants auto --weights $w --sizes $L 2>&1 | q | tee $OUT/f16_wgpu_$w.txt; done
WEBGPU_TORCH_ENGINE=wgpu $cli bench gemm --sizes 4096x4096x4096 --variants vec4_128x128 vec4_128x128_db vec4_128x128_k16_db 2>&1 | q | tee $OUT/db_wgpu.txt
timeout 60 $cli bench gemm --linear --variants auto --weights float16 --sizes 1x768x768 593x768x3072 2>&1 | q | tee $OUT/f16_dawn_fallback.txt

sweep scenarios/workloads/llama31-8b-decode-tp2.yaml --set strategy.tp=1,2,3,4 --set strategy.dp=auto --set workload.batch_size=1,64 --price-per-gpu-hour 2.5

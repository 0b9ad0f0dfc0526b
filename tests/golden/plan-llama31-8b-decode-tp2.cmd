plan scenarios/workloads/llama31-8b-decode-tp2.yaml --space batch=1,8,64 --max-tpot 4.5ms --objective tokens-per-s --top 5

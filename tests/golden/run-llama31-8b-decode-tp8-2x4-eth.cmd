run scenarios/workloads/llama31-8b-decode-tp8-2x4-eth.yaml

run scenarios/workloads/llama31-8b-decode-tp8-1x8-eth.yaml

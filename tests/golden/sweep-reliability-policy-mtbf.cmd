sweep tests/data/reliability/llama3-70b-64-shrink.yaml --set reliability.mtbf=12h,2d --set reliability.policy=restart,shrink

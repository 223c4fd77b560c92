
‚	/host:CPU°mainØü<"ôú…ÿÿÿÿÿÿÀ„=""ô§èÀ„=""ô®À„=""ÀÊº Â""´ÿÂÿÿÿÿÿÿÀ„=""´¬¥À„=""´³ÌÀ„=""ÀÊº Â"/python°¶<"€è’&"""
è€»°!"cuLaunchKernel"cudaMemcpyAsync"	train"$train.py:10 loss*correlation_id*step_num*
_r
Â/device:GPU:0Stream #7(Compute,MemcpyD2H)À„="TàØÏ""E*Aregs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1"Y
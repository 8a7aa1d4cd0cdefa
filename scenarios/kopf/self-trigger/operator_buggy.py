from operators import register, stamp_buggy

register(stamp_buggy)

from operators import register, stamp_fixed

register(stamp_fixed)

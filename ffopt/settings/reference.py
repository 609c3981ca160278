"""Keys of the [reference] table named once where several stages read them."""

# The keys that set a move's duration from limits instead of giving it (a tool speed, joint speed and acceleration
# limits): dropped where the duration is set otherwise (a longer move tried, a minimum-time search, --min-time).
DURATION_FROM_LIMIT_KEYS = ("speed_mm_s", "speed_max_deg_s", "speed_max_rad_s", "acceleration_max_deg_s2",
                            "acceleration_max_rad_s2")

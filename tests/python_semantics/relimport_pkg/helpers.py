SCALE = 3


def double(x):
    return x * 2

WHO = 'student textwrap'
def __getattr__(name):
    raise AttributeError('student module textwrap has no ' + name)

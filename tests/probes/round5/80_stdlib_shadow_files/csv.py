WHO = 'student csv'
def __getattr__(name):
    raise AttributeError('student module csv has no ' + name)

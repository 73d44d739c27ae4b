@_exported import BulwarkEncoding
@_exported import BulwarkPolicy

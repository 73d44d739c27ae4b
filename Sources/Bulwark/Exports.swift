@_exported import BulwarkPolicy

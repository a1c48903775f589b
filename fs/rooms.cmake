# The rooms of fs/ (fs/README.md), lowest first, and the rooms each may
# include. fs/CMakeLists.txt links the room libraries by this table and
# fs/check_rooms.cmake holds every `#include "fs/ROOM/..."` to it.
set(STAMPFS_FS_ROOMS base namespace data fuse admin daemon)
set(STAMPFS_FS_USES_base "")
set(STAMPFS_FS_USES_namespace base)
set(STAMPFS_FS_USES_data base namespace)
set(STAMPFS_FS_USES_fuse base namespace data)
set(STAMPFS_FS_USES_admin base namespace)
set(STAMPFS_FS_USES_daemon base namespace data fuse admin)

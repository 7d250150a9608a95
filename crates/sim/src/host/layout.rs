//! Where files live on their devices: a simple extent allocator.
//!
//! Each device's filesystem hands out space from a cursor that only moves forward. A file that
//! exists before the run gets its whole size as one contiguous extent, in the order the
//! workload lists its files. A file that grows by writing gets a new `extent_bytes` extent each
//! time it writes past the space it has; since every writer takes the next extent from the same
//! cursor, files written at the same time interleave on the disk, extent by extent, as they do
//! on a real filesystem (ext3's and XFS's allocators keep files contiguous only within an
//! allocation unit). An extent that happens to follow the file's last one is merged into it, so
//! a file written alone stays one extent and memory grows with fragmentation, not with size.

use elevator_core::SECTOR_SIZE_BYTES;

/// A contiguous piece of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Offset in the file.
    pub(crate) file_bytes: u64,
    /// First sector on the device.
    pub(crate) sector: u64,
    /// Length.
    pub(crate) length_bytes: u64,
}

/// A file's layout.
#[derive(Clone, Debug)]
pub(crate) struct FileLayout {
    pub(crate) device: usize,
    pub(crate) extents: Vec<Extent>,
    /// Bytes of the file that have space on the device.
    pub(crate) allocated_bytes: u64,
    /// The file's size: the end of the furthest byte written (or its preexisting size).
    pub(crate) size_bytes: u64,
}

impl FileLayout {
    /// The device piece holding file bytes `offset..offset + length`, as far as one extent
    /// reaches: (first sector, bytes). `None` past the allocated space.
    pub(crate) fn map(&self, offset: u64, length: u64) -> Option<(u64, u64)> {
        let index = self.extents.partition_point(|extent| extent.file_bytes <= offset);
        let extent = self.extents.get(index.checked_sub(1)?)?;
        let within = offset - extent.file_bytes;
        if within >= extent.length_bytes {
            return None;
        }
        let bytes = (extent.length_bytes - within).min(length);
        Some((extent.sector + within / SECTOR_SIZE_BYTES, bytes))
    }
}

/// A device's free space: a forward-moving cursor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allocator {
    next_sector: u64,
    capacity_sectors: u64,
}

/// The filesystem ran out of space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutOfSpace {
    pub(crate) device: usize,
}

impl Allocator {
    pub(crate) fn new(capacity_sectors: u64) -> Allocator {
        Allocator { next_sector: 0, capacity_sectors }
    }

    fn take(&mut self, bytes: u64, device: usize) -> Result<u64, OutOfSpace> {
        let sectors = bytes.div_ceil(SECTOR_SIZE_BYTES);
        if self.next_sector + sectors > self.capacity_sectors {
            return Err(OutOfSpace { device });
        }
        let start = self.next_sector;
        self.next_sector += sectors;
        Ok(start)
    }
}

/// Every file's layout and every device's allocator.
#[derive(Clone, Debug)]
pub(crate) struct Layouts {
    pub(crate) files: Vec<FileLayout>,
    allocators: Vec<Allocator>,
    extent_bytes: u64,
}

impl Layouts {
    pub(crate) fn new(device_capacity_sectors: &[u64], extent_bytes: u64) -> Layouts {
        Layouts {
            files: Vec::new(),
            allocators: device_capacity_sectors.iter().map(|&c| Allocator::new(c)).collect(),
            extent_bytes,
        }
    }

    /// Adds a file on `device` holding `size_bytes` already (laid out contiguously now).
    pub(crate) fn add_file(&mut self, device: usize, size_bytes: u64) -> Result<usize, OutOfSpace> {
        let mut layout =
            FileLayout { device, extents: Vec::new(), allocated_bytes: 0, size_bytes: 0 };
        if size_bytes > 0 {
            let rounded = size_bytes.next_multiple_of(SECTOR_SIZE_BYTES);
            let sector = self.allocators[device].take(rounded, device)?;
            layout.extents.push(Extent { file_bytes: 0, sector, length_bytes: rounded });
            layout.allocated_bytes = rounded;
            layout.size_bytes = size_bytes;
        }
        self.files.push(layout);
        Ok(self.files.len() - 1)
    }

    /// Makes sure file `file` has space up to `end_bytes`, taking extents from its device's
    /// cursor; returns how many extents were allocated.
    pub(crate) fn grow(&mut self, file: usize, end_bytes: u64) -> Result<u32, OutOfSpace> {
        let mut allocated = 0;
        while self.files[file].allocated_bytes < end_bytes {
            let device = self.files[file].device;
            let sector = self.allocators[device].take(self.extent_bytes, device)?;
            let layout = &mut self.files[file];
            let file_bytes = layout.allocated_bytes;
            match layout.extents.last_mut() {
                Some(last)
                    if last.sector + last.length_bytes / SECTOR_SIZE_BYTES == sector
                        && last.file_bytes + last.length_bytes == file_bytes =>
                {
                    last.length_bytes += self.extent_bytes;
                }
                _ => layout.extents.push(Extent {
                    file_bytes,
                    sector,
                    length_bytes: self.extent_bytes,
                }),
            }
            layout.allocated_bytes += self.extent_bytes;
            allocated += 1;
        }
        Ok(allocated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves two files written at the same time interleave extent by extent, while a file
    // written alone stays one extent.
    #[test]
    fn concurrent_writers_interleave() {
        let mut layouts = Layouts::new(&[1 << 30], 1 << 20);
        let a = layouts.add_file(0, 0).unwrap();
        let b = layouts.add_file(0, 0).unwrap();
        for step in 1..=3u64 {
            layouts.grow(a, step << 20).unwrap();
            layouts.grow(b, step << 20).unwrap();
        }
        let starts: Vec<u64> = layouts.files[a].extents.iter().map(|e| e.sector).collect();
        assert_eq!(starts, [0, 4096, 8192], "a gets every other megabyte");
        assert_eq!(layouts.files[b].extents[0].sector, 2048);
        let c = layouts.add_file(0, 0).unwrap();
        layouts.grow(c, 5 << 20).unwrap();
        assert_eq!(layouts.files[c].extents.len(), 1, "alone, a file stays contiguous");
        assert_eq!(layouts.files[a].map((1 << 20) + 512, 1 << 20), Some((4097, (1 << 20) - 512)));
        assert_eq!(layouts.files[a].map(3 << 20, 1), None);
    }

    #[test]
    fn preexisting_files_are_contiguous_in_order_and_space_runs_out() {
        let mut layouts = Layouts::new(&[2048], 1 << 20);
        let first = layouts.add_file(0, 512 * 1000).unwrap();
        let second = layouts.add_file(0, 512 * 1000).unwrap();
        assert_eq!(layouts.files[first].map(0, 1), Some((0, 1)));
        assert_eq!(layouts.files[second].map(0, 1), Some((1000, 1)));
        assert_eq!(layouts.add_file(0, 512 * 100), Err(OutOfSpace { device: 0 }));
    }
}

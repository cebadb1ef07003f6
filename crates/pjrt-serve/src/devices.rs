//! The execution slots of the devices a server runs on: `concurrent_executions` of them in all,
//! spread over the replicas' devices, handed out least recently used first, so one queue feeds
//! every device.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

pub(crate) struct DevicePool {
    slots: Arc<Semaphore>,
    /// How many slots each replica has (the model configuration's instance groups say it).
    per_replica: Vec<usize>,
    /// One entry per slot: the replica (device) it runs on.
    free: Mutex<VecDeque<usize>>,
}

/// A slot held: run on `replica`; dropped, the slot is free again.
pub(crate) struct Slot {
    pub replica: usize,
    pool: Arc<DevicePool>,
    _permit: OwnedSemaphorePermit,
}

impl DevicePool {
    /// `executions` slots (at least one per replica) over `replicas` devices.
    pub fn new(replicas: usize, executions: usize) -> Arc<DevicePool> {
        let replicas = replicas.max(1);
        let slots = executions.max(replicas);
        Arc::new(DevicePool {
            slots: Arc::new(Semaphore::new(slots)),
            per_replica: (0..replicas).map(|r| slots / replicas + usize::from(r < slots % replicas)).collect(),
            free: Mutex::new((0..slots).map(|i| i % replicas).collect()),
        })
    }

    /// How many execution slots each replica (device) has, in device order.
    pub fn per_replica(&self) -> &[usize] {
        &self.per_replica
    }

    /// Waits for a free slot.
    pub async fn acquire(self: &Arc<Self>) -> Result<Slot, AcquireError> {
        let permit = self.slots.clone().acquire_owned().await?;
        // A permit is held, so a slot is in the list (each permit's slot is put back before the
        // permit is released, in Slot's drop).
        let replica = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or(0);
        Ok(Slot { replica, pool: self.clone(), _permit: permit })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pool.free.lock().unwrap_or_else(|e| e.into_inner()).push_back(self.replica);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_go_round_the_devices() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let pool = DevicePool::new(2, 2);
            let a = pool.acquire().await.unwrap();
            let b = pool.acquire().await.unwrap();
            assert_eq!((a.replica, b.replica), (0, 1));
            drop(a);
            let c = pool.acquire().await.unwrap();
            assert_eq!(c.replica, 0);
            assert_eq!(DevicePool::new(2, 5).per_replica(), [3, 2]);
            // Fewer executions than replicas: one slot per device still.
            let pool = DevicePool::new(3, 1);
            let held: Vec<Slot> =
                [pool.acquire().await.unwrap(), pool.acquire().await.unwrap(), pool.acquire().await.unwrap()].into();
            assert_eq!(held.iter().map(|s| s.replica).collect::<Vec<_>>(), [0, 1, 2]);
        });
    }
}

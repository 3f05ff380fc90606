# Origin: https://github.com/udacity/deep-learning-v2-pytorch
#   file: autoencoder/convolutional-autoencoder/Upsampling_Solution.ipynb
#   commit: c9404fc86181fc3f0906b368697268257f348535
#   url: https://github.com/udacity/deep-learning-v2-pytorch/blob/c9404fc86181fc3f0906b368697268257f348535/autoencoder/convolutional-autoencoder/Upsampling_Solution.ipynb
# Licence: MIT (full text in ./LICENSE, copied from the repository)
# Collected for nar's breadth validation set (third-party code).
# Changes from the original:
#   - extracted from the Jupyter notebook: code cell(s) 7 (model definition and its helpers); `import torch` added
#   - removed the `# initialize the NN` lines that instantiate and print the model; data loading, training and plotting cells left out
# --------------------------------------------------------------------------------------------------
import torch
import torch.nn as nn
import torch.nn.functional as F

# define the NN architecture
class ConvAutoencoder(nn.Module):
    def __init__(self):
        super(ConvAutoencoder, self).__init__()
        ## encoder layers ##
        # conv layer (depth from 1 --> 16), 3x3 kernels
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)  
        # conv layer (depth from 16 --> 8), 3x3 kernels
        self.conv2 = nn.Conv2d(16, 4, 3, padding=1)
        # pooling layer to reduce x-y dims by two; kernel and stride of 2
        self.pool = nn.MaxPool2d(2, 2)
        
        ## decoder layers ##
        self.conv4 = nn.Conv2d(4, 16, 3, padding=1)
        self.conv5 = nn.Conv2d(16, 1, 3, padding=1)
        

    def forward(self, x):
        # add layer, with relu activation function
        # and maxpooling after
        x = F.relu(self.conv1(x))
        x = self.pool(x)
        # add hidden layer, with relu activation function
        x = F.relu(self.conv2(x))
        x = self.pool(x)  # compressed representation
        
        ## decoder 
        # upsample, followed by a conv layer, with relu activation function  
        # this function is called `interpolate` in some PyTorch versions
        x = F.upsample(x, scale_factor=2, mode='nearest')
        x = F.relu(self.conv4(x))
        # upsample again, output should have a sigmoid applied
        x = F.upsample(x, scale_factor=2, mode='nearest')
        x = F.sigmoid(self.conv5(x))
        
        return x
